// neg: neg of a [2,2] view (strides [4,1]) at offset 5 of a 16-element storage
module @tt_program attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<16xf32>) -> (tensor<4xf32>) {
    %v0 = "stablehlo.slice"(%arg0) {start_indices = array<i64: 4>, limit_indices = array<i64: 12>, strides = array<i64: 1>} : (tensor<16xf32>) -> tensor<8xf32>
    %v1 = "stablehlo.reshape"(%v0) : (tensor<8xf32>) -> tensor<2x4xf32>
    %v2 = "stablehlo.slice"(%v1) {start_indices = array<i64: 0, 1>, limit_indices = array<i64: 2, 3>, strides = array<i64: 1, 1>} : (tensor<2x4xf32>) -> tensor<2x2xf32>
    %v3 = "stablehlo.negate"(%v2) : (tensor<2x2xf32>) -> tensor<2x2xf32>
    %v4 = "stablehlo.reshape"(%v3) : (tensor<2x2xf32>) -> tensor<4xf32>
    "func.return"(%v4) : (tensor<4xf32>) -> ()
  }
}

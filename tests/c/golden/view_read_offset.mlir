// neg: neg of a [2,2] view (strides [4,1]) at offset 5 of a 16-element storage
module @tt_program attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<16xf32>, %arg1: tensor<i64>) -> (tensor<4xf32>) {
    %v0 = "stablehlo.constant"() {value = dense<4> : tensor<i64>} : () -> tensor<i64>
    %v1 = "stablehlo.divide"(%arg1, %v0) : (tensor<i64>, tensor<i64>) -> tensor<i64>
    %v2 = "stablehlo.constant"() {value = dense<4> : tensor<i64>} : () -> tensor<i64>
    %v3 = "stablehlo.remainder"(%arg1, %v2) : (tensor<i64>, tensor<i64>) -> tensor<i64>
    %v4 = "stablehlo.reshape"(%arg0) : (tensor<16xf32>) -> tensor<4x4xf32>
    %v5 = "stablehlo.dynamic_slice"(%v4, %v1, %v3) {slice_sizes = array<i64: 2, 2>} : (tensor<4x4xf32>, tensor<i64>, tensor<i64>) -> tensor<2x2xf32>
    %v6 = "stablehlo.negate"(%v5) : (tensor<2x2xf32>) -> tensor<2x2xf32>
    %v7 = "stablehlo.reshape"(%v6) : (tensor<2x2xf32>) -> tensor<4xf32>
    "func.return"(%v7) : (tensor<4xf32>) -> ()
  }
}

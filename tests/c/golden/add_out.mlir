// add.out: add.out into an f64[2,3] out= of f32 inputs, alpha=0.5
module @tt_program attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<6xf32>, %arg1: tensor<6xf32>, %arg2: tensor<f32>) -> (tensor<6xf64>) {
    %v0 = "stablehlo.reshape"(%arg0) : (tensor<6xf32>) -> tensor<2x3xf32>
    %v1 = "stablehlo.reshape"(%arg1) : (tensor<6xf32>) -> tensor<2x3xf32>
    %v2 = "stablehlo.broadcast_in_dim"(%arg2) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<2x3xf32>
    %v3 = "stablehlo.multiply"(%v1, %v2) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %v4 = "stablehlo.add"(%v0, %v3) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %v5 = "stablehlo.convert"(%v4) : (tensor<2x3xf32>) -> tensor<2x3xf64>
    %v6 = "stablehlo.reshape"(%v5) : (tensor<2x3xf64>) -> tensor<6xf64>
    "func.return"(%v6) : (tensor<6xf64>) -> ()
  }
}

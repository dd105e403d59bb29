// add.Tensor: bf16[2,3] + f32[3] * alpha=2 (int Scalar)
module @tt_program attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<6xbf16>, %arg1: tensor<3xf32>, %arg2: tensor<f32>) -> (tensor<6xf32>) {
    %v0 = "stablehlo.reshape"(%arg0) : (tensor<6xbf16>) -> tensor<2x3xbf16>
    %v1 = "stablehlo.convert"(%v0) : (tensor<2x3xbf16>) -> tensor<2x3xf32>
    %v2 = "stablehlo.broadcast_in_dim"(%arg1) {broadcast_dimensions = array<i64: 1>} : (tensor<3xf32>) -> tensor<2x3xf32>
    %v3 = "stablehlo.broadcast_in_dim"(%arg2) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<2x3xf32>
    %v4 = "stablehlo.multiply"(%v2, %v3) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %v5 = "stablehlo.add"(%v1, %v4) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %v6 = "stablehlo.reshape"(%v5) : (tensor<2x3xf32>) -> tensor<6xf32>
    "func.return"(%v6) : (tensor<6xf32>) -> ()
  }
}

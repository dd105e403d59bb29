// add.Tensor: f16[4] + 2.5 (wrapped number)
module @tt_program attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4xf16>, %arg1: tensor<f64>, %arg2: tensor<f16>) -> (tensor<4xf16>) {
    %v0 = "stablehlo.convert"(%arg0) : (tensor<4xf16>) -> tensor<4xf32>
    %v1 = "stablehlo.convert"(%arg1) : (tensor<f64>) -> tensor<f16>
    %v2 = "stablehlo.broadcast_in_dim"(%v1) {broadcast_dimensions = array<i64>} : (tensor<f16>) -> tensor<4xf16>
    %v3 = "stablehlo.convert"(%v2) : (tensor<4xf16>) -> tensor<4xf32>
    %v4 = "stablehlo.convert"(%arg2) : (tensor<f16>) -> tensor<f32>
    %v5 = "stablehlo.broadcast_in_dim"(%v4) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<4xf32>
    %v6 = "stablehlo.multiply"(%v3, %v5) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %v7 = "stablehlo.add"(%v0, %v6) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %v8 = "stablehlo.convert"(%v7) : (tensor<4xf32>) -> tensor<4xf16>
    "func.return"(%v8) : (tensor<4xf16>) -> ()
  }
}

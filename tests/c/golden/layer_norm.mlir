// native_layer_norm: f32[2,4] over the last dim, affine, eps 1e-5
module @tt_program attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<8xf32>, %arg1: tensor<4xf32>, %arg2: tensor<4xf32>) -> (tensor<8xf32>, tensor<2xf32>, tensor<2xf32>) {
    %v0 = "stablehlo.reshape"(%arg0) : (tensor<8xf32>) -> tensor<2x4xf32>
    %v1 = "stablehlo.constant"() {value = dense<0x40800000> : tensor<f32>} : () -> tensor<f32>
    %v2 = "stablehlo.constant"() {value = dense<0x00000000> : tensor<f32>} : () -> tensor<f32>
    %v3 = "stablehlo.reduce"(%v0, %v2) ({
    ^bb0(%lhs: tensor<f32>, %rhs: tensor<f32>):
      %res = "stablehlo.add"(%lhs, %rhs) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%res) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 1>} : (tensor<2x4xf32>, tensor<f32>) -> tensor<2xf32>
    %v4 = "stablehlo.broadcast_in_dim"(%v1) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<2xf32>
    %v5 = "stablehlo.divide"(%v3, %v4) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    %v6 = "stablehlo.broadcast_in_dim"(%v5) {broadcast_dimensions = array<i64: 0>} : (tensor<2xf32>) -> tensor<2x4xf32>
    %v7 = "stablehlo.subtract"(%v0, %v6) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    %v8 = "stablehlo.multiply"(%v7, %v7) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    %v9 = "stablehlo.constant"() {value = dense<0x00000000> : tensor<f32>} : () -> tensor<f32>
    %v10 = "stablehlo.reduce"(%v8, %v9) ({
    ^bb0(%lhs: tensor<f32>, %rhs: tensor<f32>):
      %res = "stablehlo.add"(%lhs, %rhs) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%res) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 1>} : (tensor<2x4xf32>, tensor<f32>) -> tensor<2xf32>
    %v11 = "stablehlo.broadcast_in_dim"(%v1) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<2xf32>
    %v12 = "stablehlo.divide"(%v10, %v11) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    %v13 = "stablehlo.constant"() {value = dense<0x3727C5AC> : tensor<f32>} : () -> tensor<f32>
    %v14 = "stablehlo.broadcast_in_dim"(%v13) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<2xf32>
    %v15 = "stablehlo.add"(%v12, %v14) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    %v16 = "stablehlo.rsqrt"(%v15) : (tensor<2xf32>) -> tensor<2xf32>
    %v17 = "stablehlo.broadcast_in_dim"(%v16) {broadcast_dimensions = array<i64: 0>} : (tensor<2xf32>) -> tensor<2x4xf32>
    %v18 = "stablehlo.multiply"(%v7, %v17) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    %v19 = "stablehlo.broadcast_in_dim"(%arg1) {broadcast_dimensions = array<i64: 1>} : (tensor<4xf32>) -> tensor<2x4xf32>
    %v20 = "stablehlo.multiply"(%v18, %v19) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    %v21 = "stablehlo.broadcast_in_dim"(%arg2) {broadcast_dimensions = array<i64: 1>} : (tensor<4xf32>) -> tensor<2x4xf32>
    %v22 = "stablehlo.add"(%v20, %v21) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    %v23 = "stablehlo.reshape"(%v5) : (tensor<2xf32>) -> tensor<2x1xf32>
    %v24 = "stablehlo.reshape"(%v16) : (tensor<2xf32>) -> tensor<2x1xf32>
    %v25 = "stablehlo.reshape"(%v22) : (tensor<2x4xf32>) -> tensor<8xf32>
    %v26 = "stablehlo.reshape"(%v23) : (tensor<2x1xf32>) -> tensor<2xf32>
    %v27 = "stablehlo.reshape"(%v24) : (tensor<2x1xf32>) -> tensor<2xf32>
    "func.return"(%v25, %v26, %v27) : (tensor<8xf32>, tensor<2xf32>, tensor<2xf32>) -> ()
  }
}

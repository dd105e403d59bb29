// _softmax: f32[2,5] over dim 1
module @tt_program attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<10xf32>) -> (tensor<10xf32>) {
    %v0 = "stablehlo.reshape"(%arg0) : (tensor<10xf32>) -> tensor<2x5xf32>
    %v1 = "stablehlo.constant"() {value = dense<0xFF800000> : tensor<f32>} : () -> tensor<f32>
    %v2 = "stablehlo.reduce"(%v0, %v1) ({
    ^bb0(%lhs: tensor<f32>, %rhs: tensor<f32>):
      %res = "stablehlo.maximum"(%lhs, %rhs) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%res) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 1>} : (tensor<2x5xf32>, tensor<f32>) -> tensor<2xf32>
    %v3 = "stablehlo.reshape"(%v2) : (tensor<2xf32>) -> tensor<2x1xf32>
    %v4 = "stablehlo.broadcast_in_dim"(%v3) {broadcast_dimensions = array<i64: 0, 1>} : (tensor<2x1xf32>) -> tensor<2x5xf32>
    %v5 = "stablehlo.subtract"(%v0, %v4) : (tensor<2x5xf32>, tensor<2x5xf32>) -> tensor<2x5xf32>
    %v6 = "stablehlo.exponential"(%v5) : (tensor<2x5xf32>) -> tensor<2x5xf32>
    %v7 = "stablehlo.constant"() {value = dense<0x00000000> : tensor<f32>} : () -> tensor<f32>
    %v8 = "stablehlo.pad"(%v6, %v7) {edge_padding_low = array<i64: 0, 0>, edge_padding_high = array<i64: 0, 3>, interior_padding = array<i64: 0, 0>} : (tensor<2x5xf32>, tensor<f32>) -> tensor<2x8xf32>
    %v9 = "stablehlo.reshape"(%v8) : (tensor<2x8xf32>) -> tensor<2x2x4xf32>
    %v10 = "stablehlo.reduce"(%v9, %v7) ({
    ^bb0(%lhs: tensor<f32>, %rhs: tensor<f32>):
      %res = "stablehlo.add"(%lhs, %rhs) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%res) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 2>} : (tensor<2x2x4xf32>, tensor<f32>) -> tensor<2x2xf32>
    %v11 = "stablehlo.reduce"(%v10, %v7) ({
    ^bb0(%lhs: tensor<f32>, %rhs: tensor<f32>):
      %res = "stablehlo.add"(%lhs, %rhs) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%res) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 1>} : (tensor<2x2xf32>, tensor<f32>) -> tensor<2xf32>
    %v12 = "stablehlo.reshape"(%v11) : (tensor<2xf32>) -> tensor<2x1xf32>
    %v13 = "stablehlo.broadcast_in_dim"(%v12) {broadcast_dimensions = array<i64: 0, 1>} : (tensor<2x1xf32>) -> tensor<2x5xf32>
    %v14 = "stablehlo.divide"(%v6, %v13) : (tensor<2x5xf32>, tensor<2x5xf32>) -> tensor<2x5xf32>
    %v15 = "stablehlo.reshape"(%v14) : (tensor<2x5xf32>) -> tensor<10xf32>
    "func.return"(%v15) : (tensor<10xf32>) -> ()
  }
}

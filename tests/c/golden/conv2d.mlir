// convolution: f32[1,2,5,5] * f32[4,1,3,3] + bias, stride (2,1), padding 1, groups 2
module @tt_program attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<50xf32>, %arg1: tensor<36xf32>, %arg2: tensor<4xf32>) -> (tensor<60xf32>) {
    %v0 = "stablehlo.reshape"(%arg0) : (tensor<50xf32>) -> tensor<1x2x5x5xf32>
    %v1 = "stablehlo.reshape"(%arg1) : (tensor<36xf32>) -> tensor<4x1x3x3xf32>
    %v2 = "stablehlo.constant"() {value = dense<0x00000000> : tensor<f32>} : () -> tensor<f32>
    %v3 = "stablehlo.pad"(%v0, %v2) {edge_padding_low = array<i64: 0, 0, 1, 1>, edge_padding_high = array<i64: 0, 0, 1, 1>, interior_padding = array<i64: 0, 0, 0, 0>} : (tensor<1x2x5x5xf32>, tensor<f32>) -> tensor<1x2x7x7xf32>
    %v4 = "stablehlo.convolution"(%v3, %v1) {dimension_numbers = #stablehlo.conv<[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]>, window_strides = array<i64: 2, 1>, padding = dense<[[0, 0], [0, 0]]> : tensor<2x2xi64>, lhs_dilation = array<i64: 1, 1>, rhs_dilation = array<i64: 1, 1>, feature_group_count = 2 : i64, batch_group_count = 1 : i64} : (tensor<1x2x7x7xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x3x5xf32>
    %v5 = "stablehlo.broadcast_in_dim"(%arg2) {broadcast_dimensions = array<i64: 1>} : (tensor<4xf32>) -> tensor<1x4x3x5xf32>
    %v6 = "stablehlo.add"(%v4, %v5) : (tensor<1x4x3x5xf32>, tensor<1x4x3x5xf32>) -> tensor<1x4x3x5xf32>
    %v7 = "stablehlo.reshape"(%v6) : (tensor<1x4x3x5xf32>) -> tensor<60xf32>
    "func.return"(%v7) : (tensor<60xf32>) -> ()
  }
}

// sum.dim_IntList: bf16[3,5] over dim -1, keepdim (accumulates in f32)
module @tt_program attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<15xbf16>) -> (tensor<3xbf16>) {
    %v0 = "stablehlo.reshape"(%arg0) : (tensor<15xbf16>) -> tensor<3x5xbf16>
    %v1 = "stablehlo.convert"(%v0) : (tensor<3x5xbf16>) -> tensor<3x5xf32>
    %v2 = "stablehlo.constant"() {value = dense<0x00000000> : tensor<f32>} : () -> tensor<f32>
    %v3 = "stablehlo.pad"(%v1, %v2) {edge_padding_low = array<i64: 0, 0>, edge_padding_high = array<i64: 0, 3>, interior_padding = array<i64: 0, 0>} : (tensor<3x5xf32>, tensor<f32>) -> tensor<3x8xf32>
    %v4 = "stablehlo.reshape"(%v3) : (tensor<3x8xf32>) -> tensor<3x2x4xf32>
    %v5 = "stablehlo.reduce"(%v4, %v2) ({
    ^bb0(%lhs: tensor<f32>, %rhs: tensor<f32>):
      %res = "stablehlo.add"(%lhs, %rhs) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%res) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 2>} : (tensor<3x2x4xf32>, tensor<f32>) -> tensor<3x2xf32>
    %v6 = "stablehlo.reduce"(%v5, %v2) ({
    ^bb0(%lhs: tensor<f32>, %rhs: tensor<f32>):
      %res = "stablehlo.add"(%lhs, %rhs) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%res) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 1>} : (tensor<3x2xf32>, tensor<f32>) -> tensor<3xf32>
    %v7 = "stablehlo.convert"(%v6) : (tensor<3xf32>) -> tensor<3xbf16>
    %v8 = "stablehlo.reshape"(%v7) : (tensor<3xbf16>) -> tensor<3x1xbf16>
    %v9 = "stablehlo.reshape"(%v8) : (tensor<3x1xbf16>) -> tensor<3xbf16>
    "func.return"(%v9) : (tensor<3xbf16>) -> ()
  }
}

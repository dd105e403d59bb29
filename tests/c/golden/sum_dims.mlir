// sum.dim_IntList: f32[2,3,4] over dims [0,2]
module @tt_program attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<24xf32>) -> (tensor<3xf32>) {
    %v0 = "stablehlo.reshape"(%arg0) : (tensor<24xf32>) -> tensor<2x3x4xf32>
    %v1 = "stablehlo.constant"() {value = dense<0x00000000> : tensor<f32>} : () -> tensor<f32>
    %v2 = "stablehlo.transpose"(%v0) {permutation = array<i64: 1, 0, 2>} : (tensor<2x3x4xf32>) -> tensor<3x2x4xf32>
    %v3 = "stablehlo.reshape"(%v2) : (tensor<3x2x4xf32>) -> tensor<3x8xf32>
    %v4 = "stablehlo.reshape"(%v3) : (tensor<3x8xf32>) -> tensor<3x2x4xf32>
    %v5 = "stablehlo.reduce"(%v4, %v1) ({
    ^bb0(%lhs: tensor<f32>, %rhs: tensor<f32>):
      %res = "stablehlo.add"(%lhs, %rhs) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%res) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 2>} : (tensor<3x2x4xf32>, tensor<f32>) -> tensor<3x2xf32>
    %v6 = "stablehlo.reduce"(%v5, %v1) ({
    ^bb0(%lhs: tensor<f32>, %rhs: tensor<f32>):
      %res = "stablehlo.add"(%lhs, %rhs) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%res) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 1>} : (tensor<3x2xf32>, tensor<f32>) -> tensor<3xf32>
    "func.return"(%v6) : (tensor<3xf32>) -> ()
  }
}

// cumsum: i32[3,4] along dim 1 (int64 result)
module @tt_program attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<12xi32>) -> (tensor<12xi64>) {
    %v0 = "stablehlo.reshape"(%arg0) : (tensor<12xi32>) -> tensor<3x4xi32>
    %v1 = "stablehlo.convert"(%v0) : (tensor<3x4xi32>) -> tensor<3x4xi64>
    %v2 = "stablehlo.constant"() {value = dense<0> : tensor<i64>} : () -> tensor<i64>
    %v3 = "stablehlo.reduce_window"(%v1, %v2) ({
    ^bb0(%lhs: tensor<i64>, %rhs: tensor<i64>):
      %res = "stablehlo.add"(%lhs, %rhs) : (tensor<i64>, tensor<i64>) -> tensor<i64>
      "stablehlo.return"(%res) : (tensor<i64>) -> ()
    }) {window_dimensions = array<i64: 1, 4>, window_strides = array<i64: 1, 1>, padding = dense<[[0, 0], [3, 0]]> : tensor<2x2xi64>} : (tensor<3x4xi64>, tensor<i64>) -> tensor<3x4xi64>
    %v4 = "stablehlo.reshape"(%v3) : (tensor<3x4xi64>) -> tensor<12xi64>
    "func.return"(%v4) : (tensor<12xi64>) -> ()
  }
}

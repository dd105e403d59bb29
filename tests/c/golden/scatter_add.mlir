// scatter_add: f32[3,4].scatter_add(1, i64[3,2], f32[3,2])
module @tt_program attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<12xf32>, %arg1: tensor<6xf32>, %arg2: tensor<6xi64>) -> (tensor<12xf32>, tensor<i32>) {
    %v0 = "stablehlo.reshape"(%arg0) : (tensor<12xf32>) -> tensor<3x4xf32>
    %v1 = "stablehlo.reshape"(%arg1) : (tensor<6xf32>) -> tensor<3x2xf32>
    %v2 = "stablehlo.reshape"(%arg2) : (tensor<6xi64>) -> tensor<3x2xi64>
    %v3 = "stablehlo.constant"() {value = dense<0> : tensor<i64>} : () -> tensor<i64>
    %v4 = "stablehlo.broadcast_in_dim"(%v3) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<3x2xi64>
    %v5 = "stablehlo.compare"(%v2, %v4) {comparison_direction = #stablehlo<comparison_direction LT>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<3x2xi64>, tensor<3x2xi64>) -> tensor<3x2xi1>
    %v6 = "stablehlo.constant"() {value = dense<4> : tensor<i64>} : () -> tensor<i64>
    %v7 = "stablehlo.broadcast_in_dim"(%v6) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<3x2xi64>
    %v8 = "stablehlo.compare"(%v2, %v7) {comparison_direction = #stablehlo<comparison_direction GE>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<3x2xi64>, tensor<3x2xi64>) -> tensor<3x2xi1>
    %v9 = "stablehlo.or"(%v5, %v8) : (tensor<3x2xi1>, tensor<3x2xi1>) -> tensor<3x2xi1>
    %v10 = "stablehlo.constant"() {value = dense<false> : tensor<i1>} : () -> tensor<i1>
    %v11 = "stablehlo.reduce"(%v9, %v10) ({
    ^bb0(%lhs: tensor<i1>, %rhs: tensor<i1>):
      %res = "stablehlo.or"(%lhs, %rhs) : (tensor<i1>, tensor<i1>) -> tensor<i1>
      "stablehlo.return"(%res) : (tensor<i1>) -> ()
    }) {dimensions = array<i64: 0, 1>} : (tensor<3x2xi1>, tensor<i1>) -> tensor<i1>
    %v12 = "stablehlo.iota"() {iota_dimension = 0 : i64} : () -> tensor<3x2xi64>
    %v13 = "stablehlo.reshape"(%v12) : (tensor<3x2xi64>) -> tensor<3x2x1xi64>
    %v14 = "stablehlo.reshape"(%v2) : (tensor<3x2xi64>) -> tensor<3x2x1xi64>
    %v15 = "stablehlo.concatenate"(%v13, %v14) {dimension = 2 : i64} : (tensor<3x2x1xi64>, tensor<3x2x1xi64>) -> tensor<3x2x2xi64>
    %v16 = "stablehlo.scatter"(%v0, %v15, %v1) ({
    ^bb0(%lhs: tensor<f32>, %rhs: tensor<f32>):
      %res = "stablehlo.add"(%lhs, %rhs) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%res) : (tensor<f32>) -> ()
    }) {scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0, 1], scatter_dims_to_operand_dims = [0, 1], index_vector_dim = 2>, indices_are_sorted = false, unique_indices = false} : (tensor<3x4xf32>, tensor<3x2x2xi64>, tensor<3x2xf32>) -> tensor<3x4xf32>
    %v17 = "stablehlo.reshape"(%v16) : (tensor<3x4xf32>) -> tensor<12xf32>
    %v18 = "stablehlo.constant"() {value = dense<2147483647> : tensor<i32>} : () -> tensor<i32>
    %v19 = "stablehlo.constant"() {value = dense<0> : tensor<i32>} : () -> tensor<i32>
    %v20 = "stablehlo.select"(%v11, %v19, %v18) : (tensor<i1>, tensor<i32>, tensor<i32>) -> tensor<i32>
    "func.return"(%v17, %v20) : (tensor<12xf32>, tensor<i32>) -> ()
  }
}

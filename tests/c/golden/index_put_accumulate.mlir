// index_put: f32[5,3][i64[2]] += f32[2,3]
module @tt_program attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<15xf32>, %arg1: tensor<6xf32>, %arg2: tensor<2xi64>) -> (tensor<15xf32>, tensor<i32>) {
    %v0 = "stablehlo.reshape"(%arg0) : (tensor<15xf32>) -> tensor<5x3xf32>
    %v1 = "stablehlo.reshape"(%arg1) : (tensor<6xf32>) -> tensor<2x3xf32>
    %v2 = "stablehlo.constant"() {value = dense<-5> : tensor<i64>} : () -> tensor<i64>
    %v3 = "stablehlo.broadcast_in_dim"(%v2) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<2xi64>
    %v4 = "stablehlo.compare"(%arg2, %v3) {comparison_direction = #stablehlo<comparison_direction LT>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi1>
    %v5 = "stablehlo.constant"() {value = dense<5> : tensor<i64>} : () -> tensor<i64>
    %v6 = "stablehlo.broadcast_in_dim"(%v5) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<2xi64>
    %v7 = "stablehlo.compare"(%arg2, %v6) {comparison_direction = #stablehlo<comparison_direction GE>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi1>
    %v8 = "stablehlo.or"(%v4, %v7) : (tensor<2xi1>, tensor<2xi1>) -> tensor<2xi1>
    %v9 = "stablehlo.constant"() {value = dense<false> : tensor<i1>} : () -> tensor<i1>
    %v10 = "stablehlo.reduce"(%v8, %v9) ({
    ^bb0(%lhs: tensor<i1>, %rhs: tensor<i1>):
      %res = "stablehlo.or"(%lhs, %rhs) : (tensor<i1>, tensor<i1>) -> tensor<i1>
      "stablehlo.return"(%res) : (tensor<i1>) -> ()
    }) {dimensions = array<i64: 0>} : (tensor<2xi1>, tensor<i1>) -> tensor<i1>
    %v11 = "stablehlo.constant"() {value = dense<0> : tensor<i64>} : () -> tensor<i64>
    %v12 = "stablehlo.broadcast_in_dim"(%v11) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<2xi64>
    %v13 = "stablehlo.constant"() {value = dense<5> : tensor<i64>} : () -> tensor<i64>
    %v14 = "stablehlo.broadcast_in_dim"(%v13) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<2xi64>
    %v15 = "stablehlo.compare"(%arg2, %v12) {comparison_direction = #stablehlo<comparison_direction LT>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi1>
    %v16 = "stablehlo.add"(%arg2, %v14) : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi64>
    %v17 = "stablehlo.select"(%v15, %v16, %arg2) : (tensor<2xi1>, tensor<2xi64>, tensor<2xi64>) -> tensor<2xi64>
    %v18 = "stablehlo.reshape"(%v17) : (tensor<2xi64>) -> tensor<2x1xi64>
    %v19 = "stablehlo.scatter"(%v0, %v18, %v1) ({
    ^bb0(%lhs: tensor<f32>, %rhs: tensor<f32>):
      %res = "stablehlo.add"(%lhs, %rhs) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%res) : (tensor<f32>) -> ()
    }) {scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, indices_are_sorted = false, unique_indices = false} : (tensor<5x3xf32>, tensor<2x1xi64>, tensor<2x3xf32>) -> tensor<5x3xf32>
    %v20 = "stablehlo.reshape"(%v19) : (tensor<5x3xf32>) -> tensor<15xf32>
    %v21 = "stablehlo.constant"() {value = dense<2147483647> : tensor<i32>} : () -> tensor<i32>
    %v22 = "stablehlo.constant"() {value = dense<0> : tensor<i32>} : () -> tensor<i32>
    %v23 = "stablehlo.select"(%v10, %v22, %v21) : (tensor<i1>, tensor<i32>, tensor<i32>) -> tensor<i32>
    "func.return"(%v20, %v23) : (tensor<15xf32>, tensor<i32>) -> ()
  }
}

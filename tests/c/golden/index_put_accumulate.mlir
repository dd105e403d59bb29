// index_put: f32[5,3][i64[2]] += f32[2,3]
module @tt_program attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<15xf32>, %arg1: tensor<6xf32>, %arg2: tensor<2xi64>) -> (tensor<15xf32>) {
    %v0 = "stablehlo.reshape"(%arg0) : (tensor<15xf32>) -> tensor<5x3xf32>
    %v1 = "stablehlo.reshape"(%arg1) : (tensor<6xf32>) -> tensor<2x3xf32>
    %v2 = "stablehlo.constant"() {value = dense<0> : tensor<i64>} : () -> tensor<i64>
    %v3 = "stablehlo.broadcast_in_dim"(%v2) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<2xi64>
    %v4 = "stablehlo.constant"() {value = dense<5> : tensor<i64>} : () -> tensor<i64>
    %v5 = "stablehlo.broadcast_in_dim"(%v4) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<2xi64>
    %v6 = "stablehlo.compare"(%arg2, %v3) {comparison_direction = #stablehlo<comparison_direction LT>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi1>
    %v7 = "stablehlo.add"(%arg2, %v5) : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi64>
    %v8 = "stablehlo.select"(%v6, %v7, %arg2) : (tensor<2xi1>, tensor<2xi64>, tensor<2xi64>) -> tensor<2xi64>
    %v9 = "stablehlo.reshape"(%v8) : (tensor<2xi64>) -> tensor<2x1xi64>
    %v10 = "stablehlo.scatter"(%v0, %v9, %v1) ({
    ^bb0(%lhs: tensor<f32>, %rhs: tensor<f32>):
      %res = "stablehlo.add"(%lhs, %rhs) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%res) : (tensor<f32>) -> ()
    }) {scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, indices_are_sorted = false, unique_indices = false} : (tensor<5x3xf32>, tensor<2x1xi64>, tensor<2x3xf32>) -> tensor<5x3xf32>
    %v11 = "stablehlo.reshape"(%v10) : (tensor<5x3xf32>) -> tensor<15xf32>
    "func.return"(%v11) : (tensor<15xf32>) -> ()
  }
}

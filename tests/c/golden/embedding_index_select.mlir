// index_select: rows i64[4] of f32[5,3] (embedding's gather)
module @tt_program attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4xi64>, %arg1: tensor<15xf32>) -> (tensor<12xf32>, tensor<i32>) {
    %v0 = "stablehlo.constant"() {value = dense<0> : tensor<i64>} : () -> tensor<i64>
    %v1 = "stablehlo.broadcast_in_dim"(%v0) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<4xi64>
    %v2 = "stablehlo.compare"(%arg0, %v1) {comparison_direction = #stablehlo<comparison_direction LT>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi1>
    %v3 = "stablehlo.constant"() {value = dense<5> : tensor<i64>} : () -> tensor<i64>
    %v4 = "stablehlo.broadcast_in_dim"(%v3) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<4xi64>
    %v5 = "stablehlo.compare"(%arg0, %v4) {comparison_direction = #stablehlo<comparison_direction GE>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi1>
    %v6 = "stablehlo.or"(%v2, %v5) : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
    %v7 = "stablehlo.constant"() {value = dense<false> : tensor<i1>} : () -> tensor<i1>
    %v8 = "stablehlo.reduce"(%v6, %v7) ({
    ^bb0(%lhs: tensor<i1>, %rhs: tensor<i1>):
      %res = "stablehlo.or"(%lhs, %rhs) : (tensor<i1>, tensor<i1>) -> tensor<i1>
      "stablehlo.return"(%res) : (tensor<i1>) -> ()
    }) {dimensions = array<i64: 0>} : (tensor<4xi1>, tensor<i1>) -> tensor<i1>
    %v9 = "stablehlo.reshape"(%arg0) : (tensor<4xi64>) -> tensor<4x1xi64>
    %v10 = "stablehlo.reshape"(%arg1) : (tensor<15xf32>) -> tensor<5x3xf32>
    %v11 = "stablehlo.gather"(%v10, %v9) {dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, slice_sizes = array<i64: 1, 3>, indices_are_sorted = false} : (tensor<5x3xf32>, tensor<4x1xi64>) -> tensor<4x3xf32>
    %v12 = "stablehlo.reshape"(%v11) : (tensor<4x3xf32>) -> tensor<12xf32>
    %v13 = "stablehlo.constant"() {value = dense<2147483647> : tensor<i32>} : () -> tensor<i32>
    %v14 = "stablehlo.constant"() {value = dense<0> : tensor<i32>} : () -> tensor<i32>
    %v15 = "stablehlo.select"(%v8, %v14, %v13) : (tensor<i1>, tensor<i32>, tensor<i32>) -> tensor<i32>
    "func.return"(%v12, %v15) : (tensor<12xf32>, tensor<i32>) -> ()
  }
}

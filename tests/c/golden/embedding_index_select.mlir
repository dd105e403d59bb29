// index_select: rows i64[4] of f32[5,3] (embedding's gather)
module @tt_program attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4xi64>, %arg1: tensor<15xf32>) -> (tensor<12xf32>, tensor<3xi64>) {
    %v0 = "stablehlo.constant"() {value = dense<0> : tensor<i64>} : () -> tensor<i64>
    %v1 = "stablehlo.broadcast_in_dim"(%v0) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<4xi64>
    %v2 = "stablehlo.compare"(%arg0, %v1) {comparison_direction = #stablehlo<comparison_direction LT>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi1>
    %v3 = "stablehlo.constant"() {value = dense<5> : tensor<i64>} : () -> tensor<i64>
    %v4 = "stablehlo.broadcast_in_dim"(%v3) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<4xi64>
    %v5 = "stablehlo.compare"(%arg0, %v4) {comparison_direction = #stablehlo<comparison_direction GE>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi1>
    %v6 = "stablehlo.or"(%v2, %v5) : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
    %v7 = "stablehlo.constant"() {value = dense<0> : tensor<i64>} : () -> tensor<i64>
    %v8 = "stablehlo.constant"() {value = dense<4> : tensor<i64>} : () -> tensor<i64>
    %v9 = "stablehlo.broadcast_in_dim"(%v8) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<4xi64>
    %v10 = "stablehlo.iota"() {iota_dimension = 0 : i64} : () -> tensor<4xi64>
    %v11 = "stablehlo.select"(%v6, %v10, %v9) : (tensor<4xi1>, tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
    %v12 = "stablehlo.reduce"(%v11, %v8) ({
    ^bb0(%lhs: tensor<i64>, %rhs: tensor<i64>):
      %res = "stablehlo.minimum"(%lhs, %rhs) : (tensor<i64>, tensor<i64>) -> tensor<i64>
      "stablehlo.return"(%res) : (tensor<i64>) -> ()
    }) {dimensions = array<i64: 0>} : (tensor<4xi64>, tensor<i64>) -> tensor<i64>
    %v13 = "stablehlo.compare"(%v12, %v8) {comparison_direction = #stablehlo<comparison_direction LT>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<i64>, tensor<i64>) -> tensor<i1>
    %v14 = "stablehlo.select"(%v13, %v12, %v7) : (tensor<i1>, tensor<i64>, tensor<i64>) -> tensor<i64>
    %v15 = "stablehlo.dynamic_slice"(%arg0, %v14) {slice_sizes = array<i64: 1>} : (tensor<4xi64>, tensor<i64>) -> tensor<1xi64>
    %v16 = "stablehlo.reshape"(%v15) : (tensor<1xi64>) -> tensor<i64>
    %v17 = "stablehlo.reshape"(%arg0) : (tensor<4xi64>) -> tensor<4x1xi64>
    %v18 = "stablehlo.reshape"(%arg1) : (tensor<15xf32>) -> tensor<5x3xf32>
    %v19 = "stablehlo.gather"(%v18, %v17) {dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, slice_sizes = array<i64: 1, 3>, indices_are_sorted = false} : (tensor<5x3xf32>, tensor<4x1xi64>) -> tensor<4x3xf32>
    %v20 = "stablehlo.reshape"(%v19) : (tensor<4x3xf32>) -> tensor<12xf32>
    %v21 = "stablehlo.constant"() {value = dense<2147483647> : tensor<i64>} : () -> tensor<i64>
    %v22 = "stablehlo.constant"() {value = dense<-1> : tensor<i64>} : () -> tensor<i64>
    %v23 = "stablehlo.constant"() {value = dense<0> : tensor<i64>} : () -> tensor<i64>
    %v24 = "stablehlo.constant"() {value = dense<0> : tensor<i64>} : () -> tensor<i64>
    %v25 = "stablehlo.select"(%v13, %v24, %v21) : (tensor<i1>, tensor<i64>, tensor<i64>) -> tensor<i64>
    %v26 = "stablehlo.select"(%v13, %v14, %v22) : (tensor<i1>, tensor<i64>, tensor<i64>) -> tensor<i64>
    %v27 = "stablehlo.select"(%v13, %v16, %v23) : (tensor<i1>, tensor<i64>, tensor<i64>) -> tensor<i64>
    %v28 = "stablehlo.reshape"(%v25) : (tensor<i64>) -> tensor<1xi64>
    %v29 = "stablehlo.reshape"(%v26) : (tensor<i64>) -> tensor<1xi64>
    %v30 = "stablehlo.reshape"(%v27) : (tensor<i64>) -> tensor<1xi64>
    %v31 = "stablehlo.concatenate"(%v28, %v29, %v30) {dimension = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3xi64>
    "func.return"(%v20, %v31) : (tensor<12xf32>, tensor<3xi64>) -> ()
  }
}

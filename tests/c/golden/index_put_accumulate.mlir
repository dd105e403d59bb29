// index_put: f32[5,3][i64[2]] += f32[2,3]
module @tt_program attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<15xf32>, %arg1: tensor<6xf32>, %arg2: tensor<2xi64>) -> (tensor<15xf32>, tensor<3xi64>) {
    %v0 = "stablehlo.reshape"(%arg0) : (tensor<15xf32>) -> tensor<5x3xf32>
    %v1 = "stablehlo.reshape"(%arg1) : (tensor<6xf32>) -> tensor<2x3xf32>
    %v2 = "stablehlo.constant"() {value = dense<-5> : tensor<i64>} : () -> tensor<i64>
    %v3 = "stablehlo.broadcast_in_dim"(%v2) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<2xi64>
    %v4 = "stablehlo.compare"(%arg2, %v3) {comparison_direction = #stablehlo<comparison_direction LT>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi1>
    %v5 = "stablehlo.constant"() {value = dense<5> : tensor<i64>} : () -> tensor<i64>
    %v6 = "stablehlo.broadcast_in_dim"(%v5) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<2xi64>
    %v7 = "stablehlo.compare"(%arg2, %v6) {comparison_direction = #stablehlo<comparison_direction GE>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi1>
    %v8 = "stablehlo.or"(%v4, %v7) : (tensor<2xi1>, tensor<2xi1>) -> tensor<2xi1>
    %v9 = "stablehlo.constant"() {value = dense<0> : tensor<i64>} : () -> tensor<i64>
    %v10 = "stablehlo.constant"() {value = dense<2> : tensor<i64>} : () -> tensor<i64>
    %v11 = "stablehlo.broadcast_in_dim"(%v10) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<2xi64>
    %v12 = "stablehlo.iota"() {iota_dimension = 0 : i64} : () -> tensor<2xi64>
    %v13 = "stablehlo.select"(%v8, %v12, %v11) : (tensor<2xi1>, tensor<2xi64>, tensor<2xi64>) -> tensor<2xi64>
    %v14 = "stablehlo.reduce"(%v13, %v10) ({
    ^bb0(%lhs: tensor<i64>, %rhs: tensor<i64>):
      %res = "stablehlo.minimum"(%lhs, %rhs) : (tensor<i64>, tensor<i64>) -> tensor<i64>
      "stablehlo.return"(%res) : (tensor<i64>) -> ()
    }) {dimensions = array<i64: 0>} : (tensor<2xi64>, tensor<i64>) -> tensor<i64>
    %v15 = "stablehlo.compare"(%v14, %v10) {comparison_direction = #stablehlo<comparison_direction LT>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<i64>, tensor<i64>) -> tensor<i1>
    %v16 = "stablehlo.select"(%v15, %v14, %v9) : (tensor<i1>, tensor<i64>, tensor<i64>) -> tensor<i64>
    %v17 = "stablehlo.dynamic_slice"(%arg2, %v16) {slice_sizes = array<i64: 1>} : (tensor<2xi64>, tensor<i64>) -> tensor<1xi64>
    %v18 = "stablehlo.reshape"(%v17) : (tensor<1xi64>) -> tensor<i64>
    %v19 = "stablehlo.constant"() {value = dense<0> : tensor<i64>} : () -> tensor<i64>
    %v20 = "stablehlo.broadcast_in_dim"(%v19) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<2xi64>
    %v21 = "stablehlo.constant"() {value = dense<5> : tensor<i64>} : () -> tensor<i64>
    %v22 = "stablehlo.broadcast_in_dim"(%v21) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<2xi64>
    %v23 = "stablehlo.compare"(%arg2, %v20) {comparison_direction = #stablehlo<comparison_direction LT>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi1>
    %v24 = "stablehlo.add"(%arg2, %v22) : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi64>
    %v25 = "stablehlo.select"(%v23, %v24, %arg2) : (tensor<2xi1>, tensor<2xi64>, tensor<2xi64>) -> tensor<2xi64>
    %v26 = "stablehlo.reshape"(%v25) : (tensor<2xi64>) -> tensor<2x1xi64>
    %v27 = "stablehlo.scatter"(%v0, %v26, %v1) ({
    ^bb0(%lhs: tensor<f32>, %rhs: tensor<f32>):
      %res = "stablehlo.add"(%lhs, %rhs) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%res) : (tensor<f32>) -> ()
    }) {scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, indices_are_sorted = false, unique_indices = false} : (tensor<5x3xf32>, tensor<2x1xi64>, tensor<2x3xf32>) -> tensor<5x3xf32>
    %v28 = "stablehlo.reshape"(%v27) : (tensor<5x3xf32>) -> tensor<15xf32>
    %v29 = "stablehlo.constant"() {value = dense<2147483647> : tensor<i64>} : () -> tensor<i64>
    %v30 = "stablehlo.constant"() {value = dense<-1> : tensor<i64>} : () -> tensor<i64>
    %v31 = "stablehlo.constant"() {value = dense<0> : tensor<i64>} : () -> tensor<i64>
    %v32 = "stablehlo.constant"() {value = dense<0> : tensor<i64>} : () -> tensor<i64>
    %v33 = "stablehlo.select"(%v15, %v32, %v29) : (tensor<i1>, tensor<i64>, tensor<i64>) -> tensor<i64>
    %v34 = "stablehlo.select"(%v15, %v16, %v30) : (tensor<i1>, tensor<i64>, tensor<i64>) -> tensor<i64>
    %v35 = "stablehlo.select"(%v15, %v18, %v31) : (tensor<i1>, tensor<i64>, tensor<i64>) -> tensor<i64>
    %v36 = "stablehlo.reshape"(%v33) : (tensor<i64>) -> tensor<1xi64>
    %v37 = "stablehlo.reshape"(%v34) : (tensor<i64>) -> tensor<1xi64>
    %v38 = "stablehlo.reshape"(%v35) : (tensor<i64>) -> tensor<1xi64>
    %v39 = "stablehlo.concatenate"(%v36, %v37, %v38) {dimension = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3xi64>
    "func.return"(%v28, %v39) : (tensor<15xf32>, tensor<3xi64>) -> ()
  }
}

// scatter_add: f32[3,4].scatter_add(1, i64[3,2], f32[3,2])
module @tt_program attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<12xf32>, %arg1: tensor<6xf32>, %arg2: tensor<6xi64>) -> (tensor<12xf32>, tensor<3xi64>) {
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
    %v10 = "stablehlo.constant"() {value = dense<0> : tensor<i64>} : () -> tensor<i64>
    %v11 = "stablehlo.reshape"(%v9) : (tensor<3x2xi1>) -> tensor<6xi1>
    %v12 = "stablehlo.constant"() {value = dense<6> : tensor<i64>} : () -> tensor<i64>
    %v13 = "stablehlo.broadcast_in_dim"(%v12) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<6xi64>
    %v14 = "stablehlo.iota"() {iota_dimension = 0 : i64} : () -> tensor<6xi64>
    %v15 = "stablehlo.select"(%v11, %v14, %v13) : (tensor<6xi1>, tensor<6xi64>, tensor<6xi64>) -> tensor<6xi64>
    %v16 = "stablehlo.reduce"(%v15, %v12) ({
    ^bb0(%lhs: tensor<i64>, %rhs: tensor<i64>):
      %res = "stablehlo.minimum"(%lhs, %rhs) : (tensor<i64>, tensor<i64>) -> tensor<i64>
      "stablehlo.return"(%res) : (tensor<i64>) -> ()
    }) {dimensions = array<i64: 0>} : (tensor<6xi64>, tensor<i64>) -> tensor<i64>
    %v17 = "stablehlo.compare"(%v16, %v12) {comparison_direction = #stablehlo<comparison_direction LT>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<i64>, tensor<i64>) -> tensor<i1>
    %v18 = "stablehlo.select"(%v17, %v16, %v10) : (tensor<i1>, tensor<i64>, tensor<i64>) -> tensor<i64>
    %v19 = "stablehlo.reshape"(%v2) : (tensor<3x2xi64>) -> tensor<6xi64>
    %v20 = "stablehlo.dynamic_slice"(%v19, %v18) {slice_sizes = array<i64: 1>} : (tensor<6xi64>, tensor<i64>) -> tensor<1xi64>
    %v21 = "stablehlo.reshape"(%v20) : (tensor<1xi64>) -> tensor<i64>
    %v22 = "stablehlo.iota"() {iota_dimension = 0 : i64} : () -> tensor<3x2xi64>
    %v23 = "stablehlo.reshape"(%v22) : (tensor<3x2xi64>) -> tensor<3x2x1xi64>
    %v24 = "stablehlo.reshape"(%v2) : (tensor<3x2xi64>) -> tensor<3x2x1xi64>
    %v25 = "stablehlo.concatenate"(%v23, %v24) {dimension = 2 : i64} : (tensor<3x2x1xi64>, tensor<3x2x1xi64>) -> tensor<3x2x2xi64>
    %v26 = "stablehlo.scatter"(%v0, %v25, %v1) ({
    ^bb0(%lhs: tensor<f32>, %rhs: tensor<f32>):
      %res = "stablehlo.add"(%lhs, %rhs) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%res) : (tensor<f32>) -> ()
    }) {scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0, 1], scatter_dims_to_operand_dims = [0, 1], index_vector_dim = 2>, indices_are_sorted = false, unique_indices = false} : (tensor<3x4xf32>, tensor<3x2x2xi64>, tensor<3x2xf32>) -> tensor<3x4xf32>
    %v27 = "stablehlo.reshape"(%v26) : (tensor<3x4xf32>) -> tensor<12xf32>
    %v28 = "stablehlo.constant"() {value = dense<2147483647> : tensor<i64>} : () -> tensor<i64>
    %v29 = "stablehlo.constant"() {value = dense<-1> : tensor<i64>} : () -> tensor<i64>
    %v30 = "stablehlo.constant"() {value = dense<0> : tensor<i64>} : () -> tensor<i64>
    %v31 = "stablehlo.constant"() {value = dense<0> : tensor<i64>} : () -> tensor<i64>
    %v32 = "stablehlo.select"(%v17, %v31, %v28) : (tensor<i1>, tensor<i64>, tensor<i64>) -> tensor<i64>
    %v33 = "stablehlo.select"(%v17, %v18, %v29) : (tensor<i1>, tensor<i64>, tensor<i64>) -> tensor<i64>
    %v34 = "stablehlo.select"(%v17, %v21, %v30) : (tensor<i1>, tensor<i64>, tensor<i64>) -> tensor<i64>
    %v35 = "stablehlo.reshape"(%v32) : (tensor<i64>) -> tensor<1xi64>
    %v36 = "stablehlo.reshape"(%v33) : (tensor<i64>) -> tensor<1xi64>
    %v37 = "stablehlo.reshape"(%v34) : (tensor<i64>) -> tensor<1xi64>
    %v38 = "stablehlo.concatenate"(%v35, %v36, %v37) {dimension = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3xi64>
    "func.return"(%v27, %v38) : (tensor<12xf32>, tensor<3xi64>) -> ()
  }
}

// scatter_add: f32[3,4].scatter_add(1, i64[3,2], f32[3,2])
module @tt_program attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<12xf32>, %arg1: tensor<6xf32>, %arg2: tensor<6xi64>) -> (tensor<12xf32>) {
    %v0 = "stablehlo.reshape"(%arg0) : (tensor<12xf32>) -> tensor<3x4xf32>
    %v1 = "stablehlo.reshape"(%arg1) : (tensor<6xf32>) -> tensor<3x2xf32>
    %v2 = "stablehlo.reshape"(%arg2) : (tensor<6xi64>) -> tensor<3x2xi64>
    %v3 = "stablehlo.iota"() {iota_dimension = 0 : i64} : () -> tensor<3x2xi64>
    %v4 = "stablehlo.reshape"(%v3) : (tensor<3x2xi64>) -> tensor<3x2x1xi64>
    %v5 = "stablehlo.reshape"(%v2) : (tensor<3x2xi64>) -> tensor<3x2x1xi64>
    %v6 = "stablehlo.concatenate"(%v4, %v5) {dimension = 2 : i64} : (tensor<3x2x1xi64>, tensor<3x2x1xi64>) -> tensor<3x2x2xi64>
    %v7 = "stablehlo.scatter"(%v0, %v6, %v1) ({
    ^bb0(%lhs: tensor<f32>, %rhs: tensor<f32>):
      %res = "stablehlo.add"(%lhs, %rhs) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%res) : (tensor<f32>) -> ()
    }) {scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0, 1], scatter_dims_to_operand_dims = [0, 1], index_vector_dim = 2>, indices_are_sorted = false, unique_indices = false} : (tensor<3x4xf32>, tensor<3x2x2xi64>, tensor<3x2xf32>) -> tensor<3x4xf32>
    %v8 = "stablehlo.reshape"(%v7) : (tensor<3x4xf32>) -> tensor<12xf32>
    "func.return"(%v8) : (tensor<12xf32>) -> ()
  }
}

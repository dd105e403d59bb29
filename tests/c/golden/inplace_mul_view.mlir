// mul_.Tensor: mul_ into a [3] column view (stride 4, offset 1) of a 12-element storage
module @tt_program attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<12xf32>, %arg1: tensor<i64>, %arg2: tensor<3xf32>) -> (tensor<12xf32>) {
    %v0 = "stablehlo.dynamic_slice"(%arg0, %arg1) {slice_sizes = array<i64: 9>} : (tensor<12xf32>, tensor<i64>) -> tensor<9xf32>
    %v1 = "stablehlo.slice"(%v0) {start_indices = array<i64: 0>, limit_indices = array<i64: 9>, strides = array<i64: 4>} : (tensor<9xf32>) -> tensor<3xf32>
    %v2 = "stablehlo.multiply"(%v1, %arg2) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %v3 = "stablehlo.constant"() {value = dense<0> : tensor<i64>} : () -> tensor<i64>
    %v4 = "stablehlo.broadcast_in_dim"(%v3) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<3xi64>
    %v5 = "stablehlo.broadcast_in_dim"(%arg1) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<3xi64>
    %v6 = "stablehlo.add"(%v4, %v5) : (tensor<3xi64>, tensor<3xi64>) -> tensor<3xi64>
    %v7 = "stablehlo.iota"() {iota_dimension = 0 : i64} : () -> tensor<3xi64>
    %v8 = "stablehlo.constant"() {value = dense<4> : tensor<i64>} : () -> tensor<i64>
    %v9 = "stablehlo.broadcast_in_dim"(%v8) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<3xi64>
    %v10 = "stablehlo.multiply"(%v7, %v9) : (tensor<3xi64>, tensor<3xi64>) -> tensor<3xi64>
    %v11 = "stablehlo.add"(%v6, %v10) : (tensor<3xi64>, tensor<3xi64>) -> tensor<3xi64>
    %v12 = "stablehlo.reshape"(%v11) : (tensor<3xi64>) -> tensor<3x1xi64>
    %v13 = "stablehlo.scatter"(%arg0, %v12, %v2) ({
    ^bb0(%lhs: tensor<f32>, %rhs: tensor<f32>):
      "stablehlo.return"(%rhs) : (tensor<f32>) -> ()
    }) {scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, indices_are_sorted = false, unique_indices = false} : (tensor<12xf32>, tensor<3x1xi64>, tensor<3xf32>) -> tensor<12xf32>
    "func.return"(%v13) : (tensor<12xf32>) -> ()
  }
}

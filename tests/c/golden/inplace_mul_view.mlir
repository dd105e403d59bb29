// mul_.Tensor: mul_ into a [3] column view (stride 4, offset 1) of a 12-element storage
module @tt_program attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<12xf32>, %arg1: tensor<3xf32>) -> (tensor<12xf32>) {
    %v0 = "stablehlo.constant"() {value = dense<0x00000000> : tensor<f32>} : () -> tensor<f32>
    %v1 = "stablehlo.pad"(%arg0, %v0) {edge_padding_low = array<i64: 0>, edge_padding_high = array<i64: 1>, interior_padding = array<i64: 0>} : (tensor<12xf32>, tensor<f32>) -> tensor<13xf32>
    %v2 = "stablehlo.slice"(%v1) {start_indices = array<i64: 1>, limit_indices = array<i64: 13>, strides = array<i64: 1>} : (tensor<13xf32>) -> tensor<12xf32>
    %v3 = "stablehlo.slice"(%v2) {start_indices = array<i64: 0>, limit_indices = array<i64: 9>, strides = array<i64: 4>} : (tensor<12xf32>) -> tensor<3xf32>
    %v4 = "stablehlo.multiply"(%v3, %arg1) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %v5 = "stablehlo.constant"() {value = dense<0> : tensor<i64>} : () -> tensor<i64>
    %v6 = "stablehlo.broadcast_in_dim"(%v5) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<3xi64>
    %v7 = "stablehlo.constant"() {value = dense<1> : tensor<i64>} : () -> tensor<i64>
    %v8 = "stablehlo.broadcast_in_dim"(%v7) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<3xi64>
    %v9 = "stablehlo.add"(%v6, %v8) : (tensor<3xi64>, tensor<3xi64>) -> tensor<3xi64>
    %v10 = "stablehlo.iota"() {iota_dimension = 0 : i64} : () -> tensor<3xi64>
    %v11 = "stablehlo.constant"() {value = dense<4> : tensor<i64>} : () -> tensor<i64>
    %v12 = "stablehlo.broadcast_in_dim"(%v11) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<3xi64>
    %v13 = "stablehlo.multiply"(%v10, %v12) : (tensor<3xi64>, tensor<3xi64>) -> tensor<3xi64>
    %v14 = "stablehlo.add"(%v9, %v13) : (tensor<3xi64>, tensor<3xi64>) -> tensor<3xi64>
    %v15 = "stablehlo.reshape"(%v14) : (tensor<3xi64>) -> tensor<3x1xi64>
    %v16 = "stablehlo.scatter"(%arg0, %v15, %v4) ({
    ^bb0(%lhs: tensor<f32>, %rhs: tensor<f32>):
      "stablehlo.return"(%rhs) : (tensor<f32>) -> ()
    }) {scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, indices_are_sorted = false, unique_indices = false} : (tensor<12xf32>, tensor<3x1xi64>, tensor<3xf32>) -> tensor<12xf32>
    "func.return"(%v16) : (tensor<12xf32>) -> ()
  }
}

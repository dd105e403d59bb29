// index_select: rows i64[4] of f32[5,3] (embedding's gather)
module @tt_program attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4xi64>, %arg1: tensor<15xf32>) -> (tensor<12xf32>) {
    %v0 = "stablehlo.reshape"(%arg0) : (tensor<4xi64>) -> tensor<4x1xi64>
    %v1 = "stablehlo.reshape"(%arg1) : (tensor<15xf32>) -> tensor<5x3xf32>
    %v2 = "stablehlo.gather"(%v1, %v0) {dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, slice_sizes = array<i64: 1, 3>, indices_are_sorted = false} : (tensor<5x3xf32>, tensor<4x1xi64>) -> tensor<4x3xf32>
    %v3 = "stablehlo.reshape"(%v2) : (tensor<4x3xf32>) -> tensor<12xf32>
    "func.return"(%v3) : (tensor<12xf32>) -> ()
  }
}

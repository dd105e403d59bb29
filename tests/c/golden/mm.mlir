// mm: f32[2,3] @ f32[3,4]
module @tt_program attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<12xf32>, %arg1: tensor<6xf32>) -> (tensor<8xf32>) {
    %v0 = "stablehlo.reshape"(%arg0) : (tensor<12xf32>) -> tensor<3x4xf32>
    %v1 = "stablehlo.reshape"(%arg1) : (tensor<6xf32>) -> tensor<2x3xf32>
    %v2 = "stablehlo.dot_general"(%v1, %v0) {dot_dimension_numbers = #stablehlo.dot<lhs_batching_dimensions = [], rhs_batching_dimensions = [], lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>} : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
    %v3 = "stablehlo.reshape"(%v2) : (tensor<2x4xf32>) -> tensor<8xf32>
    "func.return"(%v3) : (tensor<8xf32>) -> ()
  }
}

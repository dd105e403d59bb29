// golden::scale_rows: golden::scale_rows(f32[2,3], f32[3]): ${N}=2, ${D}=3
module @tt_program attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<6xf32>, %arg1: tensor<3xf32>) -> (tensor<6xf32>) {
    %v0 = "stablehlo.reshape"(%arg0) : (tensor<6xf32>) -> tensor<2x3xf32>
    %v1 = "func.call"(%v0, %arg1) {callee = @golden__scale_rows_bd6d9c157476_main} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    %v2 = "stablehlo.reshape"(%v1) : (tensor<2x3xf32>) -> tensor<6xf32>
    "func.return"(%v2) : (tensor<6xf32>) -> ()
  }

  func.func private @golden__scale_rows_bd6d9c157476_main(%x: tensor<2x3xf32>, %w: tensor<3xf32>) -> tensor<2x3xf32> {
    %wb = func.call @golden__scale_rows_bd6d9c157476_spread(%w) : (tensor<3xf32>) -> tensor<2x3xf32>
    %y = stablehlo.multiply %x, %wb : tensor<2x3xf32> // a comment's @main stays as written
    return %y : tensor<2x3xf32>
  }
  func.func private @golden__scale_rows_bd6d9c157476_spread(%w: tensor<3xf32>) -> tensor<2x3xf32> {
    %b = stablehlo.broadcast_in_dim %w, dims = [1] : (tensor<3xf32>) -> tensor<2x3xf32>
    return %b : tensor<2x3xf32>
  }


}

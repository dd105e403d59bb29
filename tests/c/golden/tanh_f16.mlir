// tanh: tanh of f16[4], computed in f32
module @tt_program attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4xf16>) -> (tensor<4xf16>) {
    %v0 = "stablehlo.convert"(%arg0) : (tensor<4xf16>) -> tensor<4xf32>
    %v1 = "stablehlo.tanh"(%v0) : (tensor<4xf32>) -> tensor<4xf32>
    %v2 = "stablehlo.convert"(%v1) : (tensor<4xf32>) -> tensor<4xf16>
    "func.return"(%v2) : (tensor<4xf16>) -> ()
  }
}

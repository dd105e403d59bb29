// sort.stable: f32[4,3] along dim 0, stable, descending
module @tt_program attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<12xf32>) -> (tensor<12xf32>, tensor<12xi64>) {
    %v0 = "stablehlo.reshape"(%arg0) : (tensor<12xf32>) -> tensor<4x3xf32>
    %v1 = "stablehlo.iota"() {iota_dimension = 0 : i64} : () -> tensor<4x3xi64>
    %v2:2 = "stablehlo.sort"(%v0, %v1) ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>, %ai: tensor<i64>, %bi: tensor<i64>):
      %c = "stablehlo.compare"(%a, %b) {comparison_direction = #stablehlo<comparison_direction GT>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %an = "stablehlo.compare"(%a, %a) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %bn = "stablehlo.compare"(%b, %b) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %nx = "stablehlo.not"(%bn) : (tensor<i1>) -> tensor<i1>
      %x = "stablehlo.and"(%nx, %an) : (tensor<i1>, tensor<i1>) -> tensor<i1>
      %r = "stablehlo.or"(%c, %x) : (tensor<i1>, tensor<i1>) -> tensor<i1>
      "stablehlo.return"(%r) : (tensor<i1>) -> ()
    }) {dimension = 0 : i64, is_stable = true} : (tensor<4x3xf32>, tensor<4x3xi64>) -> (tensor<4x3xf32>, tensor<4x3xi64>)
    %v3 = "stablehlo.reshape"(%v2#0) : (tensor<4x3xf32>) -> tensor<12xf32>
    %v4 = "stablehlo.reshape"(%v2#1) : (tensor<4x3xi64>) -> tensor<12xi64>
    "func.return"(%v3, %v4) : (tensor<12xf32>, tensor<12xi64>) -> ()
  }
}

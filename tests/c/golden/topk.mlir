// topk: 3 largest of f32[2,6] along the last dim
module @tt_program attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<12xf32>) -> (tensor<6xf32>, tensor<6xi64>) {
    %v0 = "stablehlo.reshape"(%arg0) : (tensor<12xf32>) -> tensor<2x6xf32>
    %v1 = "stablehlo.iota"() {iota_dimension = 1 : i64} : () -> tensor<2x6xi64>
    %v2:2 = "stablehlo.sort"(%v0, %v1) ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>, %ai: tensor<i64>, %bi: tensor<i64>):
      %c = "stablehlo.compare"(%a, %b) {comparison_direction = #stablehlo<comparison_direction GT>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %an = "stablehlo.compare"(%a, %a) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %bn = "stablehlo.compare"(%b, %b) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %nx = "stablehlo.not"(%bn) : (tensor<i1>) -> tensor<i1>
      %x = "stablehlo.and"(%nx, %an) : (tensor<i1>, tensor<i1>) -> tensor<i1>
      %r = "stablehlo.or"(%c, %x) : (tensor<i1>, tensor<i1>) -> tensor<i1>
      "stablehlo.return"(%r) : (tensor<i1>) -> ()
    }) {dimension = 1 : i64, is_stable = true} : (tensor<2x6xf32>, tensor<2x6xi64>) -> (tensor<2x6xf32>, tensor<2x6xi64>)
    %v3 = "stablehlo.slice"(%v2#0) {start_indices = array<i64: 0, 0>, limit_indices = array<i64: 2, 3>, strides = array<i64: 1, 1>} : (tensor<2x6xf32>) -> tensor<2x3xf32>
    %v4 = "stablehlo.slice"(%v2#1) {start_indices = array<i64: 0, 0>, limit_indices = array<i64: 2, 3>, strides = array<i64: 1, 1>} : (tensor<2x6xi64>) -> tensor<2x3xi64>
    %v5 = "stablehlo.reshape"(%v3) : (tensor<2x3xf32>) -> tensor<6xf32>
    %v6 = "stablehlo.reshape"(%v4) : (tensor<2x3xi64>) -> tensor<6xi64>
    "func.return"(%v5, %v6) : (tensor<6xf32>, tensor<6xi64>) -> ()
  }
}

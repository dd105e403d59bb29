// max_pool2d_with_indices: f32[1,1,5,5], kernel 2, stride 2, ceil_mode, with indices
module @tt_program attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<25xf32>) -> (tensor<9xf32>, tensor<9xi64>) {
    %v0 = "stablehlo.reshape"(%arg0) : (tensor<25xf32>) -> tensor<1x1x5x5xf32>
    %v1 = "stablehlo.constant"() {value = dense<0xFF800000> : tensor<f32>} : () -> tensor<f32>
    %v2 = "stablehlo.pad"(%v0, %v1) {edge_padding_low = array<i64: 0, 0, 0, 0>, edge_padding_high = array<i64: 0, 0, 1, 1>, interior_padding = array<i64: 0, 0, 0, 0>} : (tensor<1x1x5x5xf32>, tensor<f32>) -> tensor<1x1x6x6xf32>
    %v3 = "stablehlo.iota"() {iota_dimension = 2 : i64} : () -> tensor<1x1x3x3xi64>
    %v4 = "stablehlo.iota"() {iota_dimension = 3 : i64} : () -> tensor<1x1x3x3xi64>
    %v5 = "stablehlo.constant"() {value = dense<0> : tensor<i64>} : () -> tensor<i64>
    %v6 = "stablehlo.broadcast_in_dim"(%v5) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<1x1x3x3xi64>
    %v7 = "stablehlo.constant"() {value = dense<2> : tensor<i64>} : () -> tensor<i64>
    %v8 = "stablehlo.broadcast_in_dim"(%v7) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<1x1x3x3xi64>
    %v9 = "stablehlo.multiply"(%v3, %v8) : (tensor<1x1x3x3xi64>, tensor<1x1x3x3xi64>) -> tensor<1x1x3x3xi64>
    %v10 = "stablehlo.add"(%v9, %v6) : (tensor<1x1x3x3xi64>, tensor<1x1x3x3xi64>) -> tensor<1x1x3x3xi64>
    %v11 = "stablehlo.constant"() {value = dense<0> : tensor<i64>} : () -> tensor<i64>
    %v12 = "stablehlo.broadcast_in_dim"(%v11) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<1x1x3x3xi64>
    %v13 = "stablehlo.constant"() {value = dense<2> : tensor<i64>} : () -> tensor<i64>
    %v14 = "stablehlo.broadcast_in_dim"(%v13) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<1x1x3x3xi64>
    %v15 = "stablehlo.multiply"(%v4, %v14) : (tensor<1x1x3x3xi64>, tensor<1x1x3x3xi64>) -> tensor<1x1x3x3xi64>
    %v16 = "stablehlo.add"(%v15, %v12) : (tensor<1x1x3x3xi64>, tensor<1x1x3x3xi64>) -> tensor<1x1x3x3xi64>
    %v17 = "stablehlo.constant"() {value = dense<5> : tensor<i64>} : () -> tensor<i64>
    %v18 = "stablehlo.broadcast_in_dim"(%v17) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<1x1x3x3xi64>
    %v19 = "stablehlo.multiply"(%v10, %v18) : (tensor<1x1x3x3xi64>, tensor<1x1x3x3xi64>) -> tensor<1x1x3x3xi64>
    %v20 = "stablehlo.add"(%v19, %v16) : (tensor<1x1x3x3xi64>, tensor<1x1x3x3xi64>) -> tensor<1x1x3x3xi64>
    %v21 = "stablehlo.slice"(%v2) {start_indices = array<i64: 0, 0, 0, 0>, limit_indices = array<i64: 1, 1, 5, 5>, strides = array<i64: 1, 1, 2, 2>} : (tensor<1x1x6x6xf32>) -> tensor<1x1x3x3xf32>
    %v22 = "stablehlo.constant"() {value = dense<true> : tensor<i1>} : () -> tensor<i1>
    %v23 = "stablehlo.broadcast_in_dim"(%v22) {broadcast_dimensions = array<i64>} : (tensor<i1>) -> tensor<1x1x3x3xi1>
    %v24 = "stablehlo.constant"() {value = dense<0> : tensor<i64>} : () -> tensor<i64>
    %v25 = "stablehlo.broadcast_in_dim"(%v24) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<1x1x3x3xi64>
    %v26 = "stablehlo.constant"() {value = dense<2> : tensor<i64>} : () -> tensor<i64>
    %v27 = "stablehlo.broadcast_in_dim"(%v26) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<1x1x3x3xi64>
    %v28 = "stablehlo.multiply"(%v3, %v27) : (tensor<1x1x3x3xi64>, tensor<1x1x3x3xi64>) -> tensor<1x1x3x3xi64>
    %v29 = "stablehlo.add"(%v28, %v25) : (tensor<1x1x3x3xi64>, tensor<1x1x3x3xi64>) -> tensor<1x1x3x3xi64>
    %v30 = "stablehlo.constant"() {value = dense<1> : tensor<i64>} : () -> tensor<i64>
    %v31 = "stablehlo.broadcast_in_dim"(%v30) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<1x1x3x3xi64>
    %v32 = "stablehlo.constant"() {value = dense<2> : tensor<i64>} : () -> tensor<i64>
    %v33 = "stablehlo.broadcast_in_dim"(%v32) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<1x1x3x3xi64>
    %v34 = "stablehlo.multiply"(%v4, %v33) : (tensor<1x1x3x3xi64>, tensor<1x1x3x3xi64>) -> tensor<1x1x3x3xi64>
    %v35 = "stablehlo.add"(%v34, %v31) : (tensor<1x1x3x3xi64>, tensor<1x1x3x3xi64>) -> tensor<1x1x3x3xi64>
    %v36 = "stablehlo.constant"() {value = dense<5> : tensor<i64>} : () -> tensor<i64>
    %v37 = "stablehlo.broadcast_in_dim"(%v36) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<1x1x3x3xi64>
    %v38 = "stablehlo.multiply"(%v29, %v37) : (tensor<1x1x3x3xi64>, tensor<1x1x3x3xi64>) -> tensor<1x1x3x3xi64>
    %v39 = "stablehlo.add"(%v38, %v35) : (tensor<1x1x3x3xi64>, tensor<1x1x3x3xi64>) -> tensor<1x1x3x3xi64>
    %v40 = "stablehlo.constant"() {value = dense<5> : tensor<i64>} : () -> tensor<i64>
    %v41 = "stablehlo.broadcast_in_dim"(%v40) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<1x1x3x3xi64>
    %v42 = "stablehlo.compare"(%v35, %v41) {comparison_direction = #stablehlo<comparison_direction LT>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<1x1x3x3xi64>, tensor<1x1x3x3xi64>) -> tensor<1x1x3x3xi1>
    %v43 = "stablehlo.constant"() {value = dense<0> : tensor<i64>} : () -> tensor<i64>
    %v44 = "stablehlo.broadcast_in_dim"(%v43) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<1x1x3x3xi64>
    %v45 = "stablehlo.compare"(%v35, %v44) {comparison_direction = #stablehlo<comparison_direction GE>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<1x1x3x3xi64>, tensor<1x1x3x3xi64>) -> tensor<1x1x3x3xi1>
    %v46 = "stablehlo.and"(%v45, %v42) : (tensor<1x1x3x3xi1>, tensor<1x1x3x3xi1>) -> tensor<1x1x3x3xi1>
    %v47 = "stablehlo.slice"(%v2) {start_indices = array<i64: 0, 0, 0, 1>, limit_indices = array<i64: 1, 1, 5, 6>, strides = array<i64: 1, 1, 2, 2>} : (tensor<1x1x6x6xf32>) -> tensor<1x1x3x3xf32>
    %v48 = "stablehlo.compare"(%v47, %v21) {comparison_direction = #stablehlo<comparison_direction GT>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x3x3xi1>
    %v49 = "stablehlo.compare"(%v47, %v47) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x3x3xi1>
    %v50 = "stablehlo.or"(%v48, %v49) : (tensor<1x1x3x3xi1>, tensor<1x1x3x3xi1>) -> tensor<1x1x3x3xi1>
    %v51 = "stablehlo.not"(%v23) : (tensor<1x1x3x3xi1>) -> tensor<1x1x3x3xi1>
    %v52 = "stablehlo.or"(%v50, %v51) : (tensor<1x1x3x3xi1>, tensor<1x1x3x3xi1>) -> tensor<1x1x3x3xi1>
    %v53 = "stablehlo.and"(%v52, %v46) : (tensor<1x1x3x3xi1>, tensor<1x1x3x3xi1>) -> tensor<1x1x3x3xi1>
    %v54 = "stablehlo.or"(%v23, %v46) : (tensor<1x1x3x3xi1>, tensor<1x1x3x3xi1>) -> tensor<1x1x3x3xi1>
    %v55 = "stablehlo.select"(%v53, %v47, %v21) : (tensor<1x1x3x3xi1>, tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x3x3xf32>
    %v56 = "stablehlo.select"(%v53, %v39, %v20) : (tensor<1x1x3x3xi1>, tensor<1x1x3x3xi64>, tensor<1x1x3x3xi64>) -> tensor<1x1x3x3xi64>
    %v57 = "stablehlo.constant"() {value = dense<1> : tensor<i64>} : () -> tensor<i64>
    %v58 = "stablehlo.broadcast_in_dim"(%v57) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<1x1x3x3xi64>
    %v59 = "stablehlo.constant"() {value = dense<2> : tensor<i64>} : () -> tensor<i64>
    %v60 = "stablehlo.broadcast_in_dim"(%v59) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<1x1x3x3xi64>
    %v61 = "stablehlo.multiply"(%v3, %v60) : (tensor<1x1x3x3xi64>, tensor<1x1x3x3xi64>) -> tensor<1x1x3x3xi64>
    %v62 = "stablehlo.add"(%v61, %v58) : (tensor<1x1x3x3xi64>, tensor<1x1x3x3xi64>) -> tensor<1x1x3x3xi64>
    %v63 = "stablehlo.constant"() {value = dense<5> : tensor<i64>} : () -> tensor<i64>
    %v64 = "stablehlo.broadcast_in_dim"(%v63) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<1x1x3x3xi64>
    %v65 = "stablehlo.compare"(%v62, %v64) {comparison_direction = #stablehlo<comparison_direction LT>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<1x1x3x3xi64>, tensor<1x1x3x3xi64>) -> tensor<1x1x3x3xi1>
    %v66 = "stablehlo.constant"() {value = dense<0> : tensor<i64>} : () -> tensor<i64>
    %v67 = "stablehlo.broadcast_in_dim"(%v66) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<1x1x3x3xi64>
    %v68 = "stablehlo.compare"(%v62, %v67) {comparison_direction = #stablehlo<comparison_direction GE>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<1x1x3x3xi64>, tensor<1x1x3x3xi64>) -> tensor<1x1x3x3xi1>
    %v69 = "stablehlo.and"(%v68, %v65) : (tensor<1x1x3x3xi1>, tensor<1x1x3x3xi1>) -> tensor<1x1x3x3xi1>
    %v70 = "stablehlo.constant"() {value = dense<0> : tensor<i64>} : () -> tensor<i64>
    %v71 = "stablehlo.broadcast_in_dim"(%v70) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<1x1x3x3xi64>
    %v72 = "stablehlo.constant"() {value = dense<2> : tensor<i64>} : () -> tensor<i64>
    %v73 = "stablehlo.broadcast_in_dim"(%v72) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<1x1x3x3xi64>
    %v74 = "stablehlo.multiply"(%v4, %v73) : (tensor<1x1x3x3xi64>, tensor<1x1x3x3xi64>) -> tensor<1x1x3x3xi64>
    %v75 = "stablehlo.add"(%v74, %v71) : (tensor<1x1x3x3xi64>, tensor<1x1x3x3xi64>) -> tensor<1x1x3x3xi64>
    %v76 = "stablehlo.constant"() {value = dense<5> : tensor<i64>} : () -> tensor<i64>
    %v77 = "stablehlo.broadcast_in_dim"(%v76) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<1x1x3x3xi64>
    %v78 = "stablehlo.multiply"(%v62, %v77) : (tensor<1x1x3x3xi64>, tensor<1x1x3x3xi64>) -> tensor<1x1x3x3xi64>
    %v79 = "stablehlo.add"(%v78, %v75) : (tensor<1x1x3x3xi64>, tensor<1x1x3x3xi64>) -> tensor<1x1x3x3xi64>
    %v80 = "stablehlo.slice"(%v2) {start_indices = array<i64: 0, 0, 1, 0>, limit_indices = array<i64: 1, 1, 6, 5>, strides = array<i64: 1, 1, 2, 2>} : (tensor<1x1x6x6xf32>) -> tensor<1x1x3x3xf32>
    %v81 = "stablehlo.compare"(%v80, %v55) {comparison_direction = #stablehlo<comparison_direction GT>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x3x3xi1>
    %v82 = "stablehlo.compare"(%v80, %v80) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x3x3xi1>
    %v83 = "stablehlo.or"(%v81, %v82) : (tensor<1x1x3x3xi1>, tensor<1x1x3x3xi1>) -> tensor<1x1x3x3xi1>
    %v84 = "stablehlo.not"(%v54) : (tensor<1x1x3x3xi1>) -> tensor<1x1x3x3xi1>
    %v85 = "stablehlo.or"(%v83, %v84) : (tensor<1x1x3x3xi1>, tensor<1x1x3x3xi1>) -> tensor<1x1x3x3xi1>
    %v86 = "stablehlo.and"(%v85, %v69) : (tensor<1x1x3x3xi1>, tensor<1x1x3x3xi1>) -> tensor<1x1x3x3xi1>
    %v87 = "stablehlo.or"(%v54, %v69) : (tensor<1x1x3x3xi1>, tensor<1x1x3x3xi1>) -> tensor<1x1x3x3xi1>
    %v88 = "stablehlo.select"(%v86, %v80, %v55) : (tensor<1x1x3x3xi1>, tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x3x3xf32>
    %v89 = "stablehlo.select"(%v86, %v79, %v56) : (tensor<1x1x3x3xi1>, tensor<1x1x3x3xi64>, tensor<1x1x3x3xi64>) -> tensor<1x1x3x3xi64>
    %v90 = "stablehlo.constant"() {value = dense<1> : tensor<i64>} : () -> tensor<i64>
    %v91 = "stablehlo.broadcast_in_dim"(%v90) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<1x1x3x3xi64>
    %v92 = "stablehlo.constant"() {value = dense<2> : tensor<i64>} : () -> tensor<i64>
    %v93 = "stablehlo.broadcast_in_dim"(%v92) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<1x1x3x3xi64>
    %v94 = "stablehlo.multiply"(%v3, %v93) : (tensor<1x1x3x3xi64>, tensor<1x1x3x3xi64>) -> tensor<1x1x3x3xi64>
    %v95 = "stablehlo.add"(%v94, %v91) : (tensor<1x1x3x3xi64>, tensor<1x1x3x3xi64>) -> tensor<1x1x3x3xi64>
    %v96 = "stablehlo.constant"() {value = dense<5> : tensor<i64>} : () -> tensor<i64>
    %v97 = "stablehlo.broadcast_in_dim"(%v96) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<1x1x3x3xi64>
    %v98 = "stablehlo.compare"(%v95, %v97) {comparison_direction = #stablehlo<comparison_direction LT>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<1x1x3x3xi64>, tensor<1x1x3x3xi64>) -> tensor<1x1x3x3xi1>
    %v99 = "stablehlo.constant"() {value = dense<0> : tensor<i64>} : () -> tensor<i64>
    %v100 = "stablehlo.broadcast_in_dim"(%v99) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<1x1x3x3xi64>
    %v101 = "stablehlo.compare"(%v95, %v100) {comparison_direction = #stablehlo<comparison_direction GE>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<1x1x3x3xi64>, tensor<1x1x3x3xi64>) -> tensor<1x1x3x3xi1>
    %v102 = "stablehlo.and"(%v101, %v98) : (tensor<1x1x3x3xi1>, tensor<1x1x3x3xi1>) -> tensor<1x1x3x3xi1>
    %v103 = "stablehlo.constant"() {value = dense<1> : tensor<i64>} : () -> tensor<i64>
    %v104 = "stablehlo.broadcast_in_dim"(%v103) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<1x1x3x3xi64>
    %v105 = "stablehlo.constant"() {value = dense<2> : tensor<i64>} : () -> tensor<i64>
    %v106 = "stablehlo.broadcast_in_dim"(%v105) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<1x1x3x3xi64>
    %v107 = "stablehlo.multiply"(%v4, %v106) : (tensor<1x1x3x3xi64>, tensor<1x1x3x3xi64>) -> tensor<1x1x3x3xi64>
    %v108 = "stablehlo.add"(%v107, %v104) : (tensor<1x1x3x3xi64>, tensor<1x1x3x3xi64>) -> tensor<1x1x3x3xi64>
    %v109 = "stablehlo.constant"() {value = dense<5> : tensor<i64>} : () -> tensor<i64>
    %v110 = "stablehlo.broadcast_in_dim"(%v109) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<1x1x3x3xi64>
    %v111 = "stablehlo.multiply"(%v95, %v110) : (tensor<1x1x3x3xi64>, tensor<1x1x3x3xi64>) -> tensor<1x1x3x3xi64>
    %v112 = "stablehlo.add"(%v111, %v108) : (tensor<1x1x3x3xi64>, tensor<1x1x3x3xi64>) -> tensor<1x1x3x3xi64>
    %v113 = "stablehlo.constant"() {value = dense<5> : tensor<i64>} : () -> tensor<i64>
    %v114 = "stablehlo.broadcast_in_dim"(%v113) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<1x1x3x3xi64>
    %v115 = "stablehlo.compare"(%v108, %v114) {comparison_direction = #stablehlo<comparison_direction LT>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<1x1x3x3xi64>, tensor<1x1x3x3xi64>) -> tensor<1x1x3x3xi1>
    %v116 = "stablehlo.constant"() {value = dense<0> : tensor<i64>} : () -> tensor<i64>
    %v117 = "stablehlo.broadcast_in_dim"(%v116) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<1x1x3x3xi64>
    %v118 = "stablehlo.compare"(%v108, %v117) {comparison_direction = #stablehlo<comparison_direction GE>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<1x1x3x3xi64>, tensor<1x1x3x3xi64>) -> tensor<1x1x3x3xi1>
    %v119 = "stablehlo.and"(%v118, %v115) : (tensor<1x1x3x3xi1>, tensor<1x1x3x3xi1>) -> tensor<1x1x3x3xi1>
    %v120 = "stablehlo.and"(%v102, %v119) : (tensor<1x1x3x3xi1>, tensor<1x1x3x3xi1>) -> tensor<1x1x3x3xi1>
    %v121 = "stablehlo.slice"(%v2) {start_indices = array<i64: 0, 0, 1, 1>, limit_indices = array<i64: 1, 1, 6, 6>, strides = array<i64: 1, 1, 2, 2>} : (tensor<1x1x6x6xf32>) -> tensor<1x1x3x3xf32>
    %v122 = "stablehlo.compare"(%v121, %v88) {comparison_direction = #stablehlo<comparison_direction GT>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x3x3xi1>
    %v123 = "stablehlo.compare"(%v121, %v121) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x3x3xi1>
    %v124 = "stablehlo.or"(%v122, %v123) : (tensor<1x1x3x3xi1>, tensor<1x1x3x3xi1>) -> tensor<1x1x3x3xi1>
    %v125 = "stablehlo.not"(%v87) : (tensor<1x1x3x3xi1>) -> tensor<1x1x3x3xi1>
    %v126 = "stablehlo.or"(%v124, %v125) : (tensor<1x1x3x3xi1>, tensor<1x1x3x3xi1>) -> tensor<1x1x3x3xi1>
    %v127 = "stablehlo.and"(%v126, %v120) : (tensor<1x1x3x3xi1>, tensor<1x1x3x3xi1>) -> tensor<1x1x3x3xi1>
    %v128 = "stablehlo.or"(%v87, %v120) : (tensor<1x1x3x3xi1>, tensor<1x1x3x3xi1>) -> tensor<1x1x3x3xi1>
    %v129 = "stablehlo.select"(%v127, %v121, %v88) : (tensor<1x1x3x3xi1>, tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x3x3xf32>
    %v130 = "stablehlo.select"(%v127, %v112, %v89) : (tensor<1x1x3x3xi1>, tensor<1x1x3x3xi64>, tensor<1x1x3x3xi64>) -> tensor<1x1x3x3xi64>
    %v131 = "stablehlo.reshape"(%v129) : (tensor<1x1x3x3xf32>) -> tensor<9xf32>
    %v132 = "stablehlo.reshape"(%v130) : (tensor<1x1x3x3xi64>) -> tensor<9xi64>
    "func.return"(%v131, %v132) : (tensor<9xf32>, tensor<9xi64>) -> ()
  }
}

// max_pool2d_with_indices: f32[1,1,5,5], kernel 2, stride 2, ceil_mode, with indices
module @tt_program attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<25xf32>) -> (tensor<9xf32>, tensor<9xi64>) {
    %v0 = "stablehlo.reshape"(%arg0) : (tensor<25xf32>) -> tensor<1x1x5x5xf32>
    %v1 = "stablehlo.constant"() {value = dense<0xFF800000> : tensor<f32>} : () -> tensor<f32>
    %v2 = "stablehlo.pad"(%v0, %v1) {edge_padding_low = array<i64: 0, 0, 0, 0>, edge_padding_high = array<i64: 0, 0, 1, 1>, interior_padding = array<i64: 0, 0, 0, 0>} : (tensor<1x1x5x5xf32>, tensor<f32>) -> tensor<1x1x6x6xf32>
    %v3 = "stablehlo.iota"() {iota_dimension = 2 : i64} : () -> tensor<1x1x3x3xi64>
    %v4 = "stablehlo.iota"() {iota_dimension = 3 : i64} : () -> tensor<1x1x3x3xi64>
    %v5 = "stablehlo.slice"(%v2) {start_indices = array<i64: 0, 0, 0, 0>, limit_indices = array<i64: 1, 1, 5, 5>, strides = array<i64: 1, 1, 2, 2>} : (tensor<1x1x6x6xf32>) -> tensor<1x1x3x3xf32>
    %v6 = "stablehlo.constant"() {value = dense<0> : tensor<i64>} : () -> tensor<i64>
    %v7 = "stablehlo.broadcast_in_dim"(%v6) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<1x1x3x3xi64>
    %v8 = "stablehlo.constant"() {value = dense<2> : tensor<i64>} : () -> tensor<i64>
    %v9 = "stablehlo.broadcast_in_dim"(%v8) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<1x1x3x3xi64>
    %v10 = "stablehlo.multiply"(%v3, %v9) : (tensor<1x1x3x3xi64>, tensor<1x1x3x3xi64>) -> tensor<1x1x3x3xi64>
    %v11 = "stablehlo.add"(%v10, %v7) : (tensor<1x1x3x3xi64>, tensor<1x1x3x3xi64>) -> tensor<1x1x3x3xi64>
    %v12 = "stablehlo.constant"() {value = dense<0> : tensor<i64>} : () -> tensor<i64>
    %v13 = "stablehlo.broadcast_in_dim"(%v12) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<1x1x3x3xi64>
    %v14 = "stablehlo.constant"() {value = dense<2> : tensor<i64>} : () -> tensor<i64>
    %v15 = "stablehlo.broadcast_in_dim"(%v14) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<1x1x3x3xi64>
    %v16 = "stablehlo.multiply"(%v4, %v15) : (tensor<1x1x3x3xi64>, tensor<1x1x3x3xi64>) -> tensor<1x1x3x3xi64>
    %v17 = "stablehlo.add"(%v16, %v13) : (tensor<1x1x3x3xi64>, tensor<1x1x3x3xi64>) -> tensor<1x1x3x3xi64>
    %v18 = "stablehlo.constant"() {value = dense<5> : tensor<i64>} : () -> tensor<i64>
    %v19 = "stablehlo.broadcast_in_dim"(%v18) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<1x1x3x3xi64>
    %v20 = "stablehlo.multiply"(%v11, %v19) : (tensor<1x1x3x3xi64>, tensor<1x1x3x3xi64>) -> tensor<1x1x3x3xi64>
    %v21 = "stablehlo.add"(%v20, %v17) : (tensor<1x1x3x3xi64>, tensor<1x1x3x3xi64>) -> tensor<1x1x3x3xi64>
    %v22 = "stablehlo.constant"() {value = dense<true> : tensor<i1>} : () -> tensor<i1>
    %v23 = "stablehlo.broadcast_in_dim"(%v22) {broadcast_dimensions = array<i64>} : (tensor<i1>) -> tensor<1x1x3x3xi1>
    %v24 = "stablehlo.slice"(%v2) {start_indices = array<i64: 0, 0, 0, 1>, limit_indices = array<i64: 1, 1, 5, 6>, strides = array<i64: 1, 1, 2, 2>} : (tensor<1x1x6x6xf32>) -> tensor<1x1x3x3xf32>
    %v25 = "stablehlo.constant"() {value = dense<0> : tensor<i64>} : () -> tensor<i64>
    %v26 = "stablehlo.broadcast_in_dim"(%v25) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<1x1x3x3xi64>
    %v27 = "stablehlo.constant"() {value = dense<2> : tensor<i64>} : () -> tensor<i64>
    %v28 = "stablehlo.broadcast_in_dim"(%v27) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<1x1x3x3xi64>
    %v29 = "stablehlo.multiply"(%v3, %v28) : (tensor<1x1x3x3xi64>, tensor<1x1x3x3xi64>) -> tensor<1x1x3x3xi64>
    %v30 = "stablehlo.add"(%v29, %v26) : (tensor<1x1x3x3xi64>, tensor<1x1x3x3xi64>) -> tensor<1x1x3x3xi64>
    %v31 = "stablehlo.constant"() {value = dense<1> : tensor<i64>} : () -> tensor<i64>
    %v32 = "stablehlo.broadcast_in_dim"(%v31) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<1x1x3x3xi64>
    %v33 = "stablehlo.constant"() {value = dense<2> : tensor<i64>} : () -> tensor<i64>
    %v34 = "stablehlo.broadcast_in_dim"(%v33) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<1x1x3x3xi64>
    %v35 = "stablehlo.multiply"(%v4, %v34) : (tensor<1x1x3x3xi64>, tensor<1x1x3x3xi64>) -> tensor<1x1x3x3xi64>
    %v36 = "stablehlo.add"(%v35, %v32) : (tensor<1x1x3x3xi64>, tensor<1x1x3x3xi64>) -> tensor<1x1x3x3xi64>
    %v37 = "stablehlo.constant"() {value = dense<5> : tensor<i64>} : () -> tensor<i64>
    %v38 = "stablehlo.broadcast_in_dim"(%v37) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<1x1x3x3xi64>
    %v39 = "stablehlo.multiply"(%v30, %v38) : (tensor<1x1x3x3xi64>, tensor<1x1x3x3xi64>) -> tensor<1x1x3x3xi64>
    %v40 = "stablehlo.add"(%v39, %v36) : (tensor<1x1x3x3xi64>, tensor<1x1x3x3xi64>) -> tensor<1x1x3x3xi64>
    %v41 = "stablehlo.constant"() {value = dense<0> : tensor<i64>} : () -> tensor<i64>
    %v42 = "stablehlo.broadcast_in_dim"(%v41) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<1x1x3x3xi64>
    %v43 = "stablehlo.constant"() {value = dense<5> : tensor<i64>} : () -> tensor<i64>
    %v44 = "stablehlo.broadcast_in_dim"(%v43) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<1x1x3x3xi64>
    %v45 = "stablehlo.compare"(%v36, %v44) {comparison_direction = #stablehlo<comparison_direction LT>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<1x1x3x3xi64>, tensor<1x1x3x3xi64>) -> tensor<1x1x3x3xi1>
    %v46 = "stablehlo.compare"(%v36, %v42) {comparison_direction = #stablehlo<comparison_direction GE>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<1x1x3x3xi64>, tensor<1x1x3x3xi64>) -> tensor<1x1x3x3xi1>
    %v47 = "stablehlo.and"(%v46, %v45) : (tensor<1x1x3x3xi1>, tensor<1x1x3x3xi1>) -> tensor<1x1x3x3xi1>
    %v48 = "stablehlo.constant"() {value = dense<5> : tensor<i64>} : () -> tensor<i64>
    %v49 = "stablehlo.broadcast_in_dim"(%v48) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<1x1x3x3xi64>
    %v50 = "stablehlo.compare"(%v30, %v49) {comparison_direction = #stablehlo<comparison_direction LT>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<1x1x3x3xi64>, tensor<1x1x3x3xi64>) -> tensor<1x1x3x3xi1>
    %v51 = "stablehlo.compare"(%v30, %v42) {comparison_direction = #stablehlo<comparison_direction GE>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<1x1x3x3xi64>, tensor<1x1x3x3xi64>) -> tensor<1x1x3x3xi1>
    %v52 = "stablehlo.and"(%v51, %v50) : (tensor<1x1x3x3xi1>, tensor<1x1x3x3xi1>) -> tensor<1x1x3x3xi1>
    %v53 = "stablehlo.and"(%v52, %v47) : (tensor<1x1x3x3xi1>, tensor<1x1x3x3xi1>) -> tensor<1x1x3x3xi1>
    %v54 = "stablehlo.compare"(%v24, %v5) {comparison_direction = #stablehlo<comparison_direction GT>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x3x3xi1>
    %v55 = "stablehlo.compare"(%v24, %v24) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x3x3xi1>
    %v56 = "stablehlo.or"(%v54, %v55) : (tensor<1x1x3x3xi1>, tensor<1x1x3x3xi1>) -> tensor<1x1x3x3xi1>
    %v57 = "stablehlo.not"(%v23) : (tensor<1x1x3x3xi1>) -> tensor<1x1x3x3xi1>
    %v58 = "stablehlo.or"(%v56, %v57) : (tensor<1x1x3x3xi1>, tensor<1x1x3x3xi1>) -> tensor<1x1x3x3xi1>
    %v59 = "stablehlo.and"(%v58, %v53) : (tensor<1x1x3x3xi1>, tensor<1x1x3x3xi1>) -> tensor<1x1x3x3xi1>
    %v60 = "stablehlo.or"(%v23, %v53) : (tensor<1x1x3x3xi1>, tensor<1x1x3x3xi1>) -> tensor<1x1x3x3xi1>
    %v61 = "stablehlo.select"(%v59, %v24, %v5) : (tensor<1x1x3x3xi1>, tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x3x3xf32>
    %v62 = "stablehlo.select"(%v59, %v40, %v21) : (tensor<1x1x3x3xi1>, tensor<1x1x3x3xi64>, tensor<1x1x3x3xi64>) -> tensor<1x1x3x3xi64>
    %v63 = "stablehlo.slice"(%v2) {start_indices = array<i64: 0, 0, 1, 0>, limit_indices = array<i64: 1, 1, 6, 5>, strides = array<i64: 1, 1, 2, 2>} : (tensor<1x1x6x6xf32>) -> tensor<1x1x3x3xf32>
    %v64 = "stablehlo.constant"() {value = dense<1> : tensor<i64>} : () -> tensor<i64>
    %v65 = "stablehlo.broadcast_in_dim"(%v64) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<1x1x3x3xi64>
    %v66 = "stablehlo.constant"() {value = dense<2> : tensor<i64>} : () -> tensor<i64>
    %v67 = "stablehlo.broadcast_in_dim"(%v66) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<1x1x3x3xi64>
    %v68 = "stablehlo.multiply"(%v3, %v67) : (tensor<1x1x3x3xi64>, tensor<1x1x3x3xi64>) -> tensor<1x1x3x3xi64>
    %v69 = "stablehlo.add"(%v68, %v65) : (tensor<1x1x3x3xi64>, tensor<1x1x3x3xi64>) -> tensor<1x1x3x3xi64>
    %v70 = "stablehlo.constant"() {value = dense<0> : tensor<i64>} : () -> tensor<i64>
    %v71 = "stablehlo.broadcast_in_dim"(%v70) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<1x1x3x3xi64>
    %v72 = "stablehlo.constant"() {value = dense<2> : tensor<i64>} : () -> tensor<i64>
    %v73 = "stablehlo.broadcast_in_dim"(%v72) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<1x1x3x3xi64>
    %v74 = "stablehlo.multiply"(%v4, %v73) : (tensor<1x1x3x3xi64>, tensor<1x1x3x3xi64>) -> tensor<1x1x3x3xi64>
    %v75 = "stablehlo.add"(%v74, %v71) : (tensor<1x1x3x3xi64>, tensor<1x1x3x3xi64>) -> tensor<1x1x3x3xi64>
    %v76 = "stablehlo.constant"() {value = dense<5> : tensor<i64>} : () -> tensor<i64>
    %v77 = "stablehlo.broadcast_in_dim"(%v76) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<1x1x3x3xi64>
    %v78 = "stablehlo.multiply"(%v69, %v77) : (tensor<1x1x3x3xi64>, tensor<1x1x3x3xi64>) -> tensor<1x1x3x3xi64>
    %v79 = "stablehlo.add"(%v78, %v75) : (tensor<1x1x3x3xi64>, tensor<1x1x3x3xi64>) -> tensor<1x1x3x3xi64>
    %v80 = "stablehlo.constant"() {value = dense<0> : tensor<i64>} : () -> tensor<i64>
    %v81 = "stablehlo.broadcast_in_dim"(%v80) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<1x1x3x3xi64>
    %v82 = "stablehlo.constant"() {value = dense<5> : tensor<i64>} : () -> tensor<i64>
    %v83 = "stablehlo.broadcast_in_dim"(%v82) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<1x1x3x3xi64>
    %v84 = "stablehlo.compare"(%v75, %v83) {comparison_direction = #stablehlo<comparison_direction LT>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<1x1x3x3xi64>, tensor<1x1x3x3xi64>) -> tensor<1x1x3x3xi1>
    %v85 = "stablehlo.compare"(%v75, %v81) {comparison_direction = #stablehlo<comparison_direction GE>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<1x1x3x3xi64>, tensor<1x1x3x3xi64>) -> tensor<1x1x3x3xi1>
    %v86 = "stablehlo.and"(%v85, %v84) : (tensor<1x1x3x3xi1>, tensor<1x1x3x3xi1>) -> tensor<1x1x3x3xi1>
    %v87 = "stablehlo.constant"() {value = dense<5> : tensor<i64>} : () -> tensor<i64>
    %v88 = "stablehlo.broadcast_in_dim"(%v87) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<1x1x3x3xi64>
    %v89 = "stablehlo.compare"(%v69, %v88) {comparison_direction = #stablehlo<comparison_direction LT>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<1x1x3x3xi64>, tensor<1x1x3x3xi64>) -> tensor<1x1x3x3xi1>
    %v90 = "stablehlo.compare"(%v69, %v81) {comparison_direction = #stablehlo<comparison_direction GE>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<1x1x3x3xi64>, tensor<1x1x3x3xi64>) -> tensor<1x1x3x3xi1>
    %v91 = "stablehlo.and"(%v90, %v89) : (tensor<1x1x3x3xi1>, tensor<1x1x3x3xi1>) -> tensor<1x1x3x3xi1>
    %v92 = "stablehlo.and"(%v91, %v86) : (tensor<1x1x3x3xi1>, tensor<1x1x3x3xi1>) -> tensor<1x1x3x3xi1>
    %v93 = "stablehlo.compare"(%v63, %v61) {comparison_direction = #stablehlo<comparison_direction GT>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x3x3xi1>
    %v94 = "stablehlo.compare"(%v63, %v63) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x3x3xi1>
    %v95 = "stablehlo.or"(%v93, %v94) : (tensor<1x1x3x3xi1>, tensor<1x1x3x3xi1>) -> tensor<1x1x3x3xi1>
    %v96 = "stablehlo.not"(%v60) : (tensor<1x1x3x3xi1>) -> tensor<1x1x3x3xi1>
    %v97 = "stablehlo.or"(%v95, %v96) : (tensor<1x1x3x3xi1>, tensor<1x1x3x3xi1>) -> tensor<1x1x3x3xi1>
    %v98 = "stablehlo.and"(%v97, %v92) : (tensor<1x1x3x3xi1>, tensor<1x1x3x3xi1>) -> tensor<1x1x3x3xi1>
    %v99 = "stablehlo.or"(%v60, %v92) : (tensor<1x1x3x3xi1>, tensor<1x1x3x3xi1>) -> tensor<1x1x3x3xi1>
    %v100 = "stablehlo.select"(%v98, %v63, %v61) : (tensor<1x1x3x3xi1>, tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x3x3xf32>
    %v101 = "stablehlo.select"(%v98, %v79, %v62) : (tensor<1x1x3x3xi1>, tensor<1x1x3x3xi64>, tensor<1x1x3x3xi64>) -> tensor<1x1x3x3xi64>
    %v102 = "stablehlo.slice"(%v2) {start_indices = array<i64: 0, 0, 1, 1>, limit_indices = array<i64: 1, 1, 6, 6>, strides = array<i64: 1, 1, 2, 2>} : (tensor<1x1x6x6xf32>) -> tensor<1x1x3x3xf32>
    %v103 = "stablehlo.constant"() {value = dense<1> : tensor<i64>} : () -> tensor<i64>
    %v104 = "stablehlo.broadcast_in_dim"(%v103) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<1x1x3x3xi64>
    %v105 = "stablehlo.constant"() {value = dense<2> : tensor<i64>} : () -> tensor<i64>
    %v106 = "stablehlo.broadcast_in_dim"(%v105) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<1x1x3x3xi64>
    %v107 = "stablehlo.multiply"(%v3, %v106) : (tensor<1x1x3x3xi64>, tensor<1x1x3x3xi64>) -> tensor<1x1x3x3xi64>
    %v108 = "stablehlo.add"(%v107, %v104) : (tensor<1x1x3x3xi64>, tensor<1x1x3x3xi64>) -> tensor<1x1x3x3xi64>
    %v109 = "stablehlo.constant"() {value = dense<1> : tensor<i64>} : () -> tensor<i64>
    %v110 = "stablehlo.broadcast_in_dim"(%v109) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<1x1x3x3xi64>
    %v111 = "stablehlo.constant"() {value = dense<2> : tensor<i64>} : () -> tensor<i64>
    %v112 = "stablehlo.broadcast_in_dim"(%v111) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<1x1x3x3xi64>
    %v113 = "stablehlo.multiply"(%v4, %v112) : (tensor<1x1x3x3xi64>, tensor<1x1x3x3xi64>) -> tensor<1x1x3x3xi64>
    %v114 = "stablehlo.add"(%v113, %v110) : (tensor<1x1x3x3xi64>, tensor<1x1x3x3xi64>) -> tensor<1x1x3x3xi64>
    %v115 = "stablehlo.constant"() {value = dense<5> : tensor<i64>} : () -> tensor<i64>
    %v116 = "stablehlo.broadcast_in_dim"(%v115) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<1x1x3x3xi64>
    %v117 = "stablehlo.multiply"(%v108, %v116) : (tensor<1x1x3x3xi64>, tensor<1x1x3x3xi64>) -> tensor<1x1x3x3xi64>
    %v118 = "stablehlo.add"(%v117, %v114) : (tensor<1x1x3x3xi64>, tensor<1x1x3x3xi64>) -> tensor<1x1x3x3xi64>
    %v119 = "stablehlo.constant"() {value = dense<0> : tensor<i64>} : () -> tensor<i64>
    %v120 = "stablehlo.broadcast_in_dim"(%v119) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<1x1x3x3xi64>
    %v121 = "stablehlo.constant"() {value = dense<5> : tensor<i64>} : () -> tensor<i64>
    %v122 = "stablehlo.broadcast_in_dim"(%v121) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<1x1x3x3xi64>
    %v123 = "stablehlo.compare"(%v114, %v122) {comparison_direction = #stablehlo<comparison_direction LT>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<1x1x3x3xi64>, tensor<1x1x3x3xi64>) -> tensor<1x1x3x3xi1>
    %v124 = "stablehlo.compare"(%v114, %v120) {comparison_direction = #stablehlo<comparison_direction GE>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<1x1x3x3xi64>, tensor<1x1x3x3xi64>) -> tensor<1x1x3x3xi1>
    %v125 = "stablehlo.and"(%v124, %v123) : (tensor<1x1x3x3xi1>, tensor<1x1x3x3xi1>) -> tensor<1x1x3x3xi1>
    %v126 = "stablehlo.constant"() {value = dense<5> : tensor<i64>} : () -> tensor<i64>
    %v127 = "stablehlo.broadcast_in_dim"(%v126) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<1x1x3x3xi64>
    %v128 = "stablehlo.compare"(%v108, %v127) {comparison_direction = #stablehlo<comparison_direction LT>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<1x1x3x3xi64>, tensor<1x1x3x3xi64>) -> tensor<1x1x3x3xi1>
    %v129 = "stablehlo.compare"(%v108, %v120) {comparison_direction = #stablehlo<comparison_direction GE>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<1x1x3x3xi64>, tensor<1x1x3x3xi64>) -> tensor<1x1x3x3xi1>
    %v130 = "stablehlo.and"(%v129, %v128) : (tensor<1x1x3x3xi1>, tensor<1x1x3x3xi1>) -> tensor<1x1x3x3xi1>
    %v131 = "stablehlo.and"(%v130, %v125) : (tensor<1x1x3x3xi1>, tensor<1x1x3x3xi1>) -> tensor<1x1x3x3xi1>
    %v132 = "stablehlo.compare"(%v102, %v100) {comparison_direction = #stablehlo<comparison_direction GT>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x3x3xi1>
    %v133 = "stablehlo.compare"(%v102, %v102) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x3x3xi1>
    %v134 = "stablehlo.or"(%v132, %v133) : (tensor<1x1x3x3xi1>, tensor<1x1x3x3xi1>) -> tensor<1x1x3x3xi1>
    %v135 = "stablehlo.not"(%v99) : (tensor<1x1x3x3xi1>) -> tensor<1x1x3x3xi1>
    %v136 = "stablehlo.or"(%v134, %v135) : (tensor<1x1x3x3xi1>, tensor<1x1x3x3xi1>) -> tensor<1x1x3x3xi1>
    %v137 = "stablehlo.and"(%v136, %v131) : (tensor<1x1x3x3xi1>, tensor<1x1x3x3xi1>) -> tensor<1x1x3x3xi1>
    %v138 = "stablehlo.or"(%v99, %v131) : (tensor<1x1x3x3xi1>, tensor<1x1x3x3xi1>) -> tensor<1x1x3x3xi1>
    %v139 = "stablehlo.select"(%v137, %v102, %v100) : (tensor<1x1x3x3xi1>, tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x3x3xf32>
    %v140 = "stablehlo.select"(%v137, %v118, %v101) : (tensor<1x1x3x3xi1>, tensor<1x1x3x3xi64>, tensor<1x1x3x3xi64>) -> tensor<1x1x3x3xi64>
    %v141 = "stablehlo.reshape"(%v139) : (tensor<1x1x3x3xf32>) -> tensor<9xf32>
    %v142 = "stablehlo.reshape"(%v140) : (tensor<1x1x3x3xi64>) -> tensor<9xi64>
    "func.return"(%v141, %v142) : (tensor<9xf32>, tensor<9xi64>) -> ()
  }
}

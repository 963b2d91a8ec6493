# cmake/TbFeatures.cmake — the short "what was found, what is off and why" summary
# printed at the end of configure.
set_property(GLOBAL PROPERTY TB_FEATURE_LINES "")

function(tb_feature name text)
  set_property(GLOBAL APPEND PROPERTY TB_FEATURE_LINES "  ${name}: ${text}")
endfunction()

function(tb_print_features)
  get_property(lines GLOBAL PROPERTY TB_FEATURE_LINES)
  message(STATUS "")
  message(STATUS "trainbench ${PROJECT_VERSION} configuration")
  foreach(line IN LISTS lines)
    message(STATUS "${line}")
  endforeach()
  message(STATUS "")
endfunction()

# kvq-npy-verify: the command-line .npy verifier (tools/kvq/verify_cli.hpp over
# include/kvq/verify/npy_verify.hpp). Its main calls the verifier compiled for the kvq
# command (object library kvq_verify_cli, tools/kvq/verify.cpp).
add_executable(kvq_npy_verify ${CMAKE_CURRENT_LIST_DIR}/npy_verify.cpp)
set_target_properties(kvq_npy_verify PROPERTIES
  OUTPUT_NAME kvq-npy-verify
  RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR})
target_include_directories(kvq_npy_verify PRIVATE ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(kvq_npy_verify PRIVATE kvq_verify_cli kvq::study)
target_compile_options(kvq_npy_verify PRIVATE ${KVQ_WARNINGS})
install(TARGETS kvq_npy_verify RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

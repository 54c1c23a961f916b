# CTest `public_headers`: every public header (faiss_ext/*.h and the floor below,
# faiss_ext/utils/*.h) compiles alone, and none of them reaches a header of
# faiss_ext/impl/ or kernels/ (the compiler's -H list of every header it opens).
#   cmake -DCXX=<compiler> -DSOURCE_DIR=<repo> -DINCLUDES=<dir|dir|...> -DWORK_DIR=<dir>
#         -P check_public_headers.cmake
string(REPLACE "|" ";" include_dirs "${INCLUDES}")
set(flags -std=c++17 -fsyntax-only -H)
foreach(dir IN LISTS include_dirs)
  list(APPEND flags "-I${dir}")
endforeach()

file(GLOB headers RELATIVE ${SOURCE_DIR}
     ${SOURCE_DIR}/faiss_ext/*.h ${SOURCE_DIR}/faiss_ext/utils/*.h)
list(LENGTH headers count)
if(count EQUAL 0)
  message(FATAL_ERROR "no public headers found under ${SOURCE_DIR}/faiss_ext")
endif()
file(MAKE_DIRECTORY ${WORK_DIR})
set(failed 0)
foreach(header IN LISTS headers)
  string(MAKE_C_IDENTIFIER ${header} name)
  set(tu ${WORK_DIR}/${name}.cpp)
  file(WRITE ${tu} "#include <${header}>\n")
  execute_process(
    COMMAND ${CXX} ${flags} ${tu}
    RESULT_VARIABLE rc
    OUTPUT_VARIABLE out
    ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(SEND_ERROR "${header} does not compile alone:\n${err}")
    math(EXPR failed "${failed} + 1")
    continue()
  endif()
  string(REGEX MATCHALL "[^\n]*(${SOURCE_DIR}/faiss_ext/impl/|${SOURCE_DIR}/kernels/)[^\n]*"
         reached "${err}")
  if(reached)
    string(REPLACE ";" "\n" reached "${reached}")
    message(SEND_ERROR "${header} reaches implementation headers:\n${reached}")
    math(EXPR failed "${failed} + 1")
  endif()
endforeach()
if(failed GREATER 0)
  message(FATAL_ERROR "${failed} of ${count} public headers failed")
endif()
message(STATUS "${count} public headers compile alone and reach no impl/ or kernels/ header")

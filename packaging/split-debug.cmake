# Install-time step (cmake/install.cmake): strips the installed binaries
# and keeps their debug info apart, as Debian's dh_strip does: the DWARF
# goes, compressed, to <prefix>/lib/debug/.build-id/<xx>/<rest>.debug
# (named by the GNU build id), the binary keeps a .gnu_debuglink to it.
# gdb finds it under /usr/lib/debug for a /usr install.
# Inputs: CRX_SPLIT_FILES (paths relative to the install prefix),
# CRX_OBJCOPY, CRX_STRIP, CRX_READELF.
set(root "$ENV{DESTDIR}${CMAKE_INSTALL_PREFIX}")
foreach(rel IN LISTS CRX_SPLIT_FILES)
  set(f "${root}/${rel}")
  if(NOT EXISTS "${f}")
    continue()
  endif()
  execute_process(COMMAND ${CRX_READELF} -n "${f}" OUTPUT_VARIABLE notes RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0 OR NOT notes MATCHES "Build ID: ([0-9a-f][0-9a-f])([0-9a-f]+)")
    message(FATAL_ERROR "split-debug: ${f} has no GNU build id")
  endif()
  set(dbg_dir "${root}/lib/debug/.build-id/${CMAKE_MATCH_1}")
  set(dbg "${dbg_dir}/${CMAKE_MATCH_2}.debug")
  file(MAKE_DIRECTORY "${dbg_dir}")
  message(STATUS "Splitting debug info: ${f} -> ${dbg}")
  foreach(cmd
      "${CRX_OBJCOPY};--only-keep-debug;--compress-debug-sections;${f};${dbg}"
      "${CRX_STRIP};--strip-debug;--strip-unneeded;--remove-section=.comment;${f}"
      "${CRX_OBJCOPY};--add-gnu-debuglink=${dbg};${f}")
    execute_process(COMMAND ${cmd} RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "split-debug: ${cmd} failed")
    endif()
  endforeach()
  file(CHMOD "${dbg}" PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
endforeach()

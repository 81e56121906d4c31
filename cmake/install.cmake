# `cmake --install` (and the Debian package, debian/rules): what an
# operator's node needs, laid out as packaging/README.md explains.
#
#   <prefix>/bin/crx, crx-migrate            stripped; debug info split off
#   <prefix>/lib/crx/criu-plugins/           crx_ibverbs.so (crx hands CRIU this dir)
#   <prefix>/lib/debug/.build-id/            the split-off debug info
#   <prefix>/share/man/man8/crx.8, crx-migrate.8
#   <prefix>/share/bash-completion/completions/crx
#   /etc/crx/config.yaml                     example; never overwrites one there
#   /lib/systemd/system/crx-receive.service  ExecStart = <prefix>/bin/crx
#
# /etc/crx and the unit directory are absolute (crx reads /etc/crx/config.yaml
# whatever the prefix); DESTDIR applies to everything. The prefix may be
# changed at install time (cmake --install build --prefix /usr): nothing
# below depends on the prefix the tree was configured with.
include(GNUInstallDirs)
option(CRX_INSTALL_SPLIT_DEBUG
  "strip installed binaries, debug info to <prefix>/lib/debug/.build-id (off: debian/rules, dh_strip does it)" ON)
set(CRX_INSTALL_CONFDIR /etc/crx CACHE PATH "where the example config.yaml is installed")
set(CRX_SYSTEMD_UNITDIR /lib/systemd/system CACHE PATH "where crx-receive.service is installed")
set(CRX_CRIU_PLUGIN_INSTALL_DIR lib/crx/criu-plugins)  # runtime/checkpoint/criu_plugins.hpp

install(TARGETS crx crx-migrate RUNTIME DESTINATION bin)
set(split bin/crx bin/crx-migrate)
if(TARGET crx_ibverbs)
  install(TARGETS crx_ibverbs LIBRARY DESTINATION ${CRX_CRIU_PLUGIN_INSTALL_DIR})
  list(APPEND split ${CRX_CRIU_PLUGIN_INSTALL_DIR}/crx_ibverbs.so)
endif()
install(FILES packaging/crx.8 packaging/crx-migrate.8 DESTINATION ${CMAKE_INSTALL_MANDIR}/man8)
install(FILES packaging/crx.bash-completion
  DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions RENAME crx)

set(pkg ${CMAKE_SOURCE_DIR}/packaging)
install(CODE "
  # An operator's edited config stays as it is.
  if(NOT EXISTS \"\$ENV{DESTDIR}${CRX_INSTALL_CONFDIR}/config.yaml\")
    # file(INSTALL) prepends DESTDIR itself.
    file(INSTALL \"${pkg}/config.yaml\" DESTINATION \"${CRX_INSTALL_CONFDIR}\")
  else()
    message(STATUS \"Kept: \$ENV{DESTDIR}${CRX_INSTALL_CONFDIR}/config.yaml\")
  endif()
  # The unit names the binary under the prefix of this install.
  set(CRX_BINDIR \"\${CMAKE_INSTALL_PREFIX}/bin\")
  configure_file(\"${pkg}/crx-receive.service.in\"
    \"\$ENV{DESTDIR}${CRX_SYSTEMD_UNITDIR}/crx-receive.service\" @ONLY)
  message(STATUS \"Installing: \$ENV{DESTDIR}${CRX_SYSTEMD_UNITDIR}/crx-receive.service\")
")
# CRX_INSTALL_SPLIT_DEBUG=0 in the environment of `cmake --install` turns
# it off too (debian/rules: dh_strip makes crx-dbgsym instead).
if(CRX_INSTALL_SPLIT_DEBUG)
  install(CODE "
    if(NOT \"\$ENV{CRX_INSTALL_SPLIT_DEBUG}\" STREQUAL \"0\")
      set(CRX_SPLIT_FILES \"${split}\")
      set(CRX_OBJCOPY \"${CMAKE_OBJCOPY}\")
      set(CRX_STRIP \"${CMAKE_STRIP}\")
      set(CRX_READELF \"${CMAKE_READELF}\")
      include(\"${pkg}/split-debug.cmake\")
    endif()
  ")
endif()

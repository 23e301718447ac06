# `cmake --install` and the Debian package (CPack's DEB generator).
#   PREFIX/bin/ridge                         the binary (and whatever it embeds)
#   PREFIX/share/doc/ridge/                  README.md, docs/*.md
#   PREFIX/share/doc/ridge/deploy/           Grafana dashboard, Prometheus config, Dockerfile, README
#   PREFIX/share/doc/ridge/examples/         ridge.env (/etc/default/ridge), serve.toml (--config)
#   PREFIX/lib/systemd/system/ridge.service  the unit, its ExecStart pointing at PREFIX/bin/ridge
# The package installs into /usr (so /usr/lib/systemd/system, which systemd
# reads on Debian 12) and depends on the libraries' packages that
# dpkg-shlibdeps finds for the binary. tests/deploy/ builds and installs it.
include(GNUInstallDirs)

install(TARGETS ridge RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
file(GLOB RIDGE_DOC_FILES ${CMAKE_SOURCE_DIR}/docs/*.md)
install(FILES ${CMAKE_SOURCE_DIR}/README.md ${RIDGE_DOC_FILES} DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY ${CMAKE_SOURCE_DIR}/deploy/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/deploy
        PATTERN ridge.service EXCLUDE PATTERN ridge.env EXCLUDE PATTERN serve.toml EXCLUDE)
install(FILES ${CMAKE_SOURCE_DIR}/deploy/ridge.env ${CMAKE_SOURCE_DIR}/deploy/serve.toml
        DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples)
# The prefix is known only when installing (cpack installs into /usr whatever
# CMAKE_INSTALL_PREFIX was at configure time): the unit's paths are
# rewritten then.
install(CODE "set(RIDGE_UNIT_SOURCE \"${CMAKE_SOURCE_DIR}/deploy/ridge.service\")
              set(RIDGE_UNIT_STAGING \"${CMAKE_BINARY_DIR}/systemd-unit\")
              set(RIDGE_UNIT_BINDIR \"${CMAKE_INSTALL_BINDIR}\")
              set(RIDGE_UNIT_DOCDIR \"${CMAKE_INSTALL_DOCDIR}\")")
install(SCRIPT ${CMAKE_SOURCE_DIR}/cmake/InstallSystemdUnit.cmake)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME ridge)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "LLM inference engine and OpenAI-compatible server that shows where the time and memory go")
set(CPACK_PACKAGE_CONTACT "ridge maintainers <ridge@localhost>")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # ridge_VERSION_ARCH.deb
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS OFF)
include(CPack)

# Run by `cmake --install` (see RidgeInstall.cmake): installs deploy/ridge.service
# with its /usr/bin/ridge and /usr/share/doc/ridge paths moved under this
# install's prefix (the same for the .deb, which installs into /usr).
file(READ "${RIDGE_UNIT_SOURCE}" unit)
string(REPLACE "/usr/bin/ridge" "${CMAKE_INSTALL_PREFIX}/${RIDGE_UNIT_BINDIR}/ridge" unit "${unit}")
string(REPLACE "/usr/share/doc/ridge" "${CMAKE_INSTALL_PREFIX}/${RIDGE_UNIT_DOCDIR}" unit "${unit}")
file(WRITE "${RIDGE_UNIT_STAGING}/ridge.service" "${unit}")
file(INSTALL DESTINATION "${CMAKE_INSTALL_PREFIX}/lib/systemd/system" TYPE FILE
     FILES "${RIDGE_UNIT_STAGING}/ridge.service")

# Browser test of the web page: Debian's headless Chromium driven by
# playwright-core and checked by axe-core (pinned in tests/webui/package.json
# and package-lock.json; no browser is downloaded) against `ridge serve`.
#
# Like tests/e2e: the files are copied into BUILD/webui-tests, the fixture
# webui_npm_install runs `npm ci` there, and webui_browser runs the script.
# Screenshots are left in BUILD/webui-tests/work/screenshots. Chromium is
# required (scripts/setup.sh installs Debian's `chromium`): without it the
# test fails, never passes silently.
if(RIDGE_SANITIZE OR RIDGE_SANITIZE_THREAD)
  return()  # the Release tree runs it: it tests the page, not memory
endif()
find_program(RIDGE_NODE node)
find_program(RIDGE_NPM npm)
find_program(RIDGE_CHROMIUM chromium PATHS /usr/bin)
if(NOT RIDGE_CHROMIUM)
  message(FATAL_ERROR "tests/webui: chromium is required for the browser test. Run scripts/setup.sh.")
endif()

set(RIDGE_WEBUI_TEST_DIR ${CMAKE_BINARY_DIR}/webui-tests)
foreach(file package.json package-lock.json webui_browser.mjs)
  configure_file(${CMAKE_CURRENT_LIST_DIR}/${file} ${RIDGE_WEBUI_TEST_DIR}/${file} COPYONLY)
endforeach()
configure_file(${CMAKE_CURRENT_LIST_DIR}/../node/ridge_server.mjs ${RIDGE_WEBUI_TEST_DIR}/ridge_server.mjs COPYONLY)

add_test(NAME webui_npm_install
         COMMAND ${RIDGE_NPM} ci --no-audit --no-fund --prefer-offline
         WORKING_DIRECTORY ${RIDGE_WEBUI_TEST_DIR})
set_tests_properties(webui_npm_install PROPERTIES FIXTURES_SETUP ridge_webui_node TIMEOUT 600 LABELS webui)

add_test(NAME webui_browser
         COMMAND ${RIDGE_NODE} ${RIDGE_WEBUI_TEST_DIR}/webui_browser.mjs $<TARGET_FILE:ridge> ${RIDGE_SHARED_DIR}
                 ${RIDGE_WEBUI_TEST_DIR}/work
         WORKING_DIRECTORY ${RIDGE_WEBUI_TEST_DIR})
set_tests_properties(webui_browser PROPERTIES FIXTURES_REQUIRED ridge_webui_node TIMEOUT 300 LABELS webui
                     ENVIRONMENT RIDGE_CHROMIUM=${RIDGE_CHROMIUM})

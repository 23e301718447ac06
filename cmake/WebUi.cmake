# The web page `ridge serve` answers at / (webui/): built at build time and
# compiled into ridge_server.
#   1. npm ci in BUILD/webui from webui/package-lock.json (pinned esbuild,
#      uPlot, marked, DOMPurify; node_modules stays in the build folder);
#   2. esbuild bundles webui/src into BUILD/webui/dist (one .js, one .css,
#      index.html): everything the page needs, no CDN;
#   3. cmake/EmbedFiles.cmake writes the files' bytes into a C++ source.
# Each step re-runs when its inputs change (the lock file, any file under webui/src).
find_program(RIDGE_WEBUI_NPM npm)
if(NOT RIDGE_WEBUI_NPM)
  message(FATAL_ERROR "webui: npm is required to build the web page. Run scripts/setup.sh.")
endif()
set(RIDGE_WEBUI_DIR ${CMAKE_BINARY_DIR}/webui)
set(src ${CMAKE_SOURCE_DIR}/webui)
configure_file(${src}/package.json ${RIDGE_WEBUI_DIR}/package.json COPYONLY)
configure_file(${src}/package-lock.json ${RIDGE_WEBUI_DIR}/package-lock.json COPYONLY)
add_custom_command(
  OUTPUT ${RIDGE_WEBUI_DIR}/node_modules/.package-lock.json
  COMMAND ${RIDGE_WEBUI_NPM} ci --no-audit --no-fund --prefer-offline --loglevel=error
  DEPENDS ${src}/package.json ${src}/package-lock.json
  WORKING_DIRECTORY ${RIDGE_WEBUI_DIR}
  COMMENT "webui: npm ci (esbuild, uPlot, marked, DOMPurify)")
file(GLOB_RECURSE webui_sources CONFIGURE_DEPENDS ${src}/src/*)
set(dist ${RIDGE_WEBUI_DIR}/dist)
add_custom_command(
  OUTPUT ${dist}/index.html ${dist}/assets/app.js ${dist}/assets/app.css
  COMMAND ${CMAKE_COMMAND} -E rm -rf ${dist}
  COMMAND ${CMAKE_COMMAND} -E env NODE_PATH=${RIDGE_WEBUI_DIR}/node_modules
          ${RIDGE_WEBUI_DIR}/node_modules/.bin/esbuild ${src}/src/main.js --bundle --minify --format=iife
          --target=es2020 --legal-comments=none --log-level=warning --outfile=${dist}/assets/app.js
  COMMAND ${CMAKE_COMMAND} -E copy ${src}/src/index.html ${dist}/index.html
  DEPENDS ${webui_sources} ${RIDGE_WEBUI_DIR}/node_modules/.package-lock.json
  COMMENT "webui: esbuild bundle")
set(RIDGE_WEBUI_SOURCE ${RIDGE_WEBUI_DIR}/webui_assets_data.cc)
add_custom_command(
  OUTPUT ${RIDGE_WEBUI_SOURCE}
  COMMAND ${CMAKE_COMMAND} -DOUT=${RIDGE_WEBUI_SOURCE} -DDIST=${dist} -P ${CMAKE_SOURCE_DIR}/cmake/EmbedFiles.cmake
  DEPENDS ${dist}/index.html ${dist}/assets/app.js ${dist}/assets/app.css ${CMAKE_SOURCE_DIR}/cmake/EmbedFiles.cmake
  COMMENT "webui: embedding the page")
target_sources(ridge_server PRIVATE ${RIDGE_WEBUI_SOURCE})

# Deployment suite (label `deploy`): what deploy/ and the install rules ship,
# run for real on this machine.
#   deploy_fetch_prometheus  fixture: prometheus + promtool (fetch_debian_programs.sh)
#   deploy_dashboard         check_dashboard.py: the Grafana dashboard and the
#                            Prometheus config against ridge's /metrics, promtool
#                            and a real Prometheus scraping `ridge serve`
#   deploy_systemd_unit      check_systemd_unit.py: deploy/ridge.service through
#                            systemd-analyze verify and security
#   deploy_deb_package       check_deb.py: cpack's .deb installed by dpkg into a
#                            temporary root, its ridge serve answering a completion
#   deploy_fetch_nginx       fixture: nginx (fetch_debian_programs.sh)
#   deploy_nginx_replicas    check_nginx_replicas.py: two ridge serve replicas behind
#                            nginx with deploy/nginx's configuration, ridge bench serve
#                            through it losing nothing, also with a replica killed
# deploy/README.md says what each checks and why.
# The sanitizer trees leave it to the Release tree: it tests files and
# packaging, not memory.
if(RIDGE_SANITIZE OR RIDGE_SANITIZE_THREAD)
  return()
endif()

set(RIDGE_DEPLOY_WORK ${CMAKE_BINARY_DIR}/deploy-tests)
set(RIDGE_DEPLOY_PYTHON /usr/bin/python3 -B)

add_test(NAME deploy_fetch_prometheus
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/fetch_debian_programs.sh ${RIDGE_DEPLOY_WORK}/prometheus prometheus
                 prometheus promtool)
set_tests_properties(deploy_fetch_prometheus PROPERTIES FIXTURES_SETUP ridge_prometheus TIMEOUT 600 LABELS deploy)

add_test(NAME deploy_dashboard
         COMMAND ${RIDGE_DEPLOY_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/check_dashboard.py $<TARGET_FILE:ridge>
                 ${RIDGE_SHARED_DIR} ${CMAKE_SOURCE_DIR} ${RIDGE_DEPLOY_WORK}/prometheus ${RIDGE_DEPLOY_WORK}/dashboard)
set_tests_properties(deploy_dashboard PROPERTIES FIXTURES_REQUIRED ridge_prometheus TIMEOUT 300 LABELS deploy)

add_test(NAME deploy_systemd_unit
         COMMAND ${RIDGE_DEPLOY_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/check_systemd_unit.py ${CMAKE_SOURCE_DIR}
                 $<TARGET_FILE:ridge> ${RIDGE_DEPLOY_WORK}/systemd)
set_tests_properties(deploy_systemd_unit PROPERTIES TIMEOUT 120 LABELS deploy)

add_test(NAME deploy_deb_package
         COMMAND ${RIDGE_DEPLOY_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/check_deb.py ${CMAKE_BINARY_DIR}/CPackConfig.cmake
                 ${PROJECT_VERSION} ${RIDGE_SHARED_DIR} ${CMAKE_SOURCE_DIR} ${RIDGE_DEPLOY_WORK}/deb)
set_tests_properties(deploy_deb_package PROPERTIES TIMEOUT 600 LABELS deploy)

add_test(NAME deploy_fetch_nginx
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/fetch_debian_programs.sh ${RIDGE_DEPLOY_WORK}/nginx nginx nginx)
set_tests_properties(deploy_fetch_nginx PROPERTIES FIXTURES_SETUP ridge_nginx TIMEOUT 600 LABELS deploy)

add_test(NAME deploy_nginx_replicas
         COMMAND ${RIDGE_DEPLOY_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/check_nginx_replicas.py $<TARGET_FILE:ridge>
                 ${RIDGE_SHARED_DIR} ${CMAKE_SOURCE_DIR} ${RIDGE_DEPLOY_WORK}/nginx/nginx ${RIDGE_DEPLOY_WORK}/replicas)
set_tests_properties(deploy_nginx_replicas PROPERTIES FIXTURES_REQUIRED ridge_nginx TIMEOUT 600 LABELS deploy)

# Deployment suite (label `deploy`): what deploy/ and the install rules ship,
# run for real on this machine.
#   deploy_fetch_prometheus  fixture: prometheus + promtool (fetch_prometheus.sh)
#   deploy_dashboard         check_dashboard.py: the Grafana dashboard and the
#                            Prometheus config against ridge's /metrics, promtool
#                            and a real Prometheus scraping `ridge serve`
# The sanitizer trees leave it to the Release tree: it tests files and
# packaging, not memory.
if(RIDGE_SANITIZE OR RIDGE_SANITIZE_THREAD)
  return()
endif()

set(RIDGE_DEPLOY_WORK ${CMAKE_BINARY_DIR}/deploy-tests)
set(RIDGE_DEPLOY_PYTHON /usr/bin/python3 -B)

add_test(NAME deploy_fetch_prometheus
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/fetch_prometheus.sh ${RIDGE_DEPLOY_WORK}/prometheus)
set_tests_properties(deploy_fetch_prometheus PROPERTIES FIXTURES_SETUP ridge_prometheus TIMEOUT 600 LABELS deploy)

add_test(NAME deploy_dashboard
         COMMAND ${RIDGE_DEPLOY_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/check_dashboard.py $<TARGET_FILE:ridge>
                 ${RIDGE_SHARED_DIR} ${CMAKE_SOURCE_DIR} ${RIDGE_DEPLOY_WORK}/prometheus ${RIDGE_DEPLOY_WORK}/dashboard)
set_tests_properties(deploy_dashboard PROPERTIES FIXTURES_REQUIRED ridge_prometheus TIMEOUT 300 LABELS deploy)

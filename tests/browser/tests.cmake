# tests.cmake — the HTML report in a real browser (label browser): Debian's
# chromium, headless, driven over the DevTools protocol by puppeteer-core.
# browser_npm_ci installs puppeteer-core (package-lock.json, nothing else: no
# browser download, no install scripts) into the build tree; each *.test.mjs
# then writes reports with the built memplan and checks them in the browser.
# Without chromium, node or npm every test here is SKIPPED with a message that
# says what is missing (exit 77), never passed silently.
set(MEMPLAN_BROWSER_DIR ${CMAKE_CURRENT_LIST_DIR})
set(MEMPLAN_BROWSER_WORK ${CMAKE_CURRENT_BINARY_DIR}/browser)

add_test(NAME browser_npm_ci
  COMMAND ${MEMPLAN_BROWSER_DIR}/npm_ci.sh ${MEMPLAN_BROWSER_DIR} ${MEMPLAN_BROWSER_WORK})
set_tests_properties(browser_npm_ci PROPERTIES LABELS browser TIMEOUT 300 SKIP_RETURN_CODE 77
  FIXTURES_SETUP memplan_browser_modules)

file(GLOB MEMPLAN_BROWSER_TESTS CONFIGURE_DEPENDS ${MEMPLAN_BROWSER_DIR}/*.test.mjs)
foreach(test_file ${MEMPLAN_BROWSER_TESTS})
  get_filename_component(name ${test_file} NAME_WE)
  add_test(NAME browser_${name}
    COMMAND ${MEMPLAN_BROWSER_DIR}/run_browser_test.sh ${MEMPLAN_BROWSER_WORK}/node_modules ${test_file})
  set_tests_properties(browser_${name} PROPERTIES
    LABELS browser TIMEOUT 240 SKIP_RETURN_CODE 77
    FIXTURES_REQUIRED memplan_browser_modules
    # One browser at a time: each takes most of a core while it draws.
    RESOURCE_LOCK memplan_browser
    ENVIRONMENT "MEMPLAN=$<TARGET_FILE:memplan>;MEMPLAN_BROWSER_OUT=${MEMPLAN_BROWSER_WORK}/${name}")
endforeach()

#include "ridge/server/http_router.h"

#include <algorithm>

namespace ridge::server {

void HttpRouter::Add(std::string method, const std::string& pattern, Handler handler) {
  routes_.push_back({std::move(method), std::regex(pattern), std::move(handler)});
}

void HttpRouter::Route(httplib::Request& req, httplib::Response& res) const {
  std::vector<std::string> allowed;  // methods the path has
  for (const Entry& r : routes_) {
    std::smatch matches;
    if (!std::regex_match(req.path, matches, r.pattern)) continue;
    if (r.method == req.method) {
      req.matches = std::move(matches);
      r.handler(req, res);
      return;
    }
    if (std::find(allowed.begin(), allowed.end(), r.method) == allowed.end()) allowed.push_back(r.method);
  }
  if (allowed.empty()) {
    res.status = 404;
    return;
  }
  std::string allow = allowed[0];
  for (size_t i = 1; i < allowed.size(); ++i) allow += ", " + allowed[i];
  res.status = 405;
  res.set_header("Allow", allow);
}

}  // namespace ridge::server

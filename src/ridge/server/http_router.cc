#include "ridge/server/http_router.h"

#include <algorithm>

namespace ridge::server {

void HttpRouter::Add(std::string method, std::string path, Handler handler) {
  routes_.push_back({std::move(method), std::move(path), false, std::move(handler)});
}

void HttpRouter::AddPrefix(std::string method, std::string prefix, Handler handler) {
  routes_.push_back({std::move(method), std::move(prefix), true, std::move(handler)});
}

bool HttpRouter::Entry::Matches(const std::string& request_path) const {
  if (!prefix) return request_path == path;
  return request_path.size() > path.size() && request_path.compare(0, path.size(), path) == 0;
}

void HttpRouter::Route(const httplib::Request& req, httplib::Response& res) const {
  std::vector<std::string> allowed;  // methods the path has
  for (const Entry& r : routes_) {
    if (!r.Matches(req.path)) continue;
    if (r.method == req.method) {
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

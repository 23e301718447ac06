#pragma once
// Routes a request by method and path: an exact path, or a prefix ending in
// '/' that matches any longer path (the handler reads the rest, an id, from
// req.path). A path no route knows is 404; a path known under other methods
// only is 405 with an Allow header listing them. Either way the body is left
// empty for the caller to fill. (No std::regex: g++ 12 reports false
// -Wmaybe-uninitialized inside <regex> under the sanitizers.)
#include <httplib.h>

#include <functional>
#include <string>
#include <vector>

namespace ridge::server {

class HttpRouter {
 public:
  using Handler = std::function<void(const httplib::Request&, httplib::Response&)>;

  void Add(std::string method, std::string path, Handler handler);
  void AddPrefix(std::string method, std::string prefix, Handler handler);
  void Route(const httplib::Request& req, httplib::Response& res) const;

 private:
  struct Entry {
    std::string method;
    std::string path;
    bool prefix;
    Handler handler;
    bool Matches(const std::string& request_path) const;
  };
  std::vector<Entry> routes_;
};

}  // namespace ridge::server

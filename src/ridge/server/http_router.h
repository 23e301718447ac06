#pragma once
// Routes a request by method and path pattern (a whole-path regular
// expression; its groups land in req.matches). A path no route knows is 404;
// a path known under other methods only is 405 with an Allow header listing
// them. Either way the body is left empty for the caller to fill.
#include <httplib.h>

#include <functional>
#include <regex>
#include <string>
#include <vector>

namespace ridge::server {

class HttpRouter {
 public:
  using Handler = std::function<void(const httplib::Request&, httplib::Response&)>;

  void Add(std::string method, const std::string& pattern, Handler handler);
  void Route(httplib::Request& req, httplib::Response& res) const;

 private:
  struct Entry {
    std::string method;
    std::regex pattern;
    Handler handler;
  };
  std::vector<Entry> routes_;
};

}  // namespace ridge::server

#include "ridge/server/webui_assets.h"

namespace ridge::server {

const WebAsset* FindWebAsset(std::string_view path) {
  for (const WebAsset& a : WebUiAssets())
    if (a.path == path) return &a;
  return nullptr;
}

}  // namespace ridge::server

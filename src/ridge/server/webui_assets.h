#pragma once
// The single-page app `ridge serve` answers at / (webui/, bundled by esbuild
// at build time and compiled into the binary by cmake/EmbedWebUi.cmake): no
// file or network is read at run time.
#include <span>
#include <string_view>

namespace ridge::server {

struct WebAsset {
  std::string_view path;          // "/", "/assets/app.js", ...
  std::string_view content_type;  // "text/html; charset=utf-8", ...
  std::string_view body;
};

// Every embedded file (generated at build time).
std::span<const WebAsset> WebUiAssets();
// The asset at `path`, or null.
const WebAsset* FindWebAsset(std::string_view path);

}  // namespace ridge::server

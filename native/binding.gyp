# Built by scripts/build-native.sh (node-gyp rebuild --directory native) against the
# local Node headers (npm_config_nodedir=/usr); output: native/build/Release/ironet.node.
{
  'targets': [
    {
      'target_name': 'ironet',
      'sources': ['addon.cc', 'errors.cc', 'sockets.cc', 'receiver.cc'],
      # node-addon-api with C++ exceptions: a Napi::Error thrown in C++ becomes the JS exception.
      'dependencies': ["<!(node -p \"require('node-addon-api').targets\"):node_addon_api_except"],
      'defines': ['NAPI_VERSION=8'],
      'cflags_cc': ['-std=c++17', '-Wall', '-Wextra'],
      'cflags_cc!': ['-std=gnu++17'],
    },
  ],
}

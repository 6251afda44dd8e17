// The C++ API as a CMake user of the installed package builds it (CMakeLists.txt beside this:
// find_package(axon), axon::axon). Joins, puts a value into its own symmetric memory, reads it
// back; exit 0 and one line on success, an axon::Error's message otherwise.
#include <axon/axon.hpp>

#include <cstdint>
#include <cstdio>

int main() {
  try {
    axon::init();
    auto* word = static_cast<std::int64_t*>(axon::calloc(1, sizeof(std::int64_t)));
    const std::int64_t value = 4343;
    axon::put(word, &value, sizeof value, axon::myPe());
    axon::barrierAll();
    if (*word != value) {
      std::fprintf(stderr, "read %lld back, expected %lld\n", static_cast<long long>(*word),
                   static_cast<long long>(value));
      return 1;
    }
    std::printf("hello from PE %d of %d: %lld\n", axon::myPe(), axon::nPes(), static_cast<long long>(*word));
    axon::free(word);
    axon::finalize();
  } catch (const axon::Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}

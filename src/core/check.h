// Invariant checks: a violated invariant is a bug, not a recoverable error. It throws a
// std::logic_error naming the place and the condition, in every build type; nothing catches it,
// so the process ends through std::terminate, which prints the message.
#ifndef TESSERA_CORE_CHECK_H_
#define TESSERA_CORE_CHECK_H_

#include <stdexcept>
#include <string>

namespace tessera::core {

[[noreturn]] inline void CheckFailed(const char* file, int line, const char* cond) {
  throw std::logic_error(std::string(file) + ":" + std::to_string(line) +
                         ": invariant violated: " + cond);
}

}  // namespace tessera::core

#define TESSERA_CHECK(cond)                                               \
  do {                                                                    \
    if (!(cond)) ::tessera::core::CheckFailed(__FILE__, __LINE__, #cond); \
  } while (0)

#endif  // TESSERA_CORE_CHECK_H_

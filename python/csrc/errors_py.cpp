// axon::Error -> the Python exception class for its code. The classes are defined in
// axon/errors.py and handed over once at import by set_error_classes().
#include <map>

#include "axon/error.hpp"
#include "bindings.hpp"

namespace nb = nanobind;

namespace axon::py {
namespace {

std::map<int, nb::object>& errorClasses() {
  static auto* classes = new std::map<int, nb::object>();  // leaked on purpose: lives past exit
  return *classes;
}

}  // namespace

void bindErrors(nb::module_& m) {
  m.def("set_error_classes", [](nb::dict classes) {
    for (auto [code, cls] : classes) errorClasses()[nb::cast<int>(code)] = nb::borrow(cls);
  });
  m.def("error_code_name", [](int code) { return errorCodeName(static_cast<ErrorCode>(code)); });
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const Error& e) {
      // A signal that arrived during the call wins over the error the call ended with: Ctrl-C
      // under `axon run` reaches every PE, and a PE waiting for one that stopped first sees
      // PeerDeadError. Raised now, the handler's exception (KeyboardInterrupt) is what the user
      // caused; left pending, it would fire while Python prints the PeerDeadError and CPython
      // would dump raw object fields ("lost sys.stderr") instead of either traceback.
      if (PyErr_CheckSignals() != 0) return;
      auto it = errorClasses().find(static_cast<int>(e.code()));
      if (it == errorClasses().end()) {
        PyErr_SetString(PyExc_RuntimeError, e.what());
        return;
      }
      PyErr_SetString(it->second.ptr(), e.what());
    }
  });
}

}  // namespace axon::py

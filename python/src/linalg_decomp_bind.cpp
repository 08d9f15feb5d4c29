// Bindings of lucid.linalg's decompositions and solvers (csrc/lucid/ops/linalg_decomp.cpp) and
// of LinAlgError, the RuntimeError subclass their numerical failures raise (torch.linalg's
// LinAlgError). python/lucid/linalg wraps these with torch's signatures and namedtuples.
#include "bind.h"
#include "lucid/core/linalg_error.h"
#include "lucid/ops/linalg.h"

namespace lucid::py {

LUCID_BINDER(linalg_decomp) {
  nb::exception<LinAlgError>(m, "LinAlgError", PyExc_RuntimeError);
  m.def("_linalg_solve", &linalg_solve, nb::arg("A"), nb::arg("B"), nb::arg("left"));
  m.def("_linalg_solve_triangular", &linalg_solve_triangular, nb::arg("A"), nb::arg("B"), nb::arg("upper"),
        nb::arg("left"), nb::arg("unitriangular"));
  m.def("_linalg_inv", &linalg_inv, nb::arg("A"));
  m.def("_linalg_det", &linalg_det, nb::arg("A"));
  m.def("_linalg_slogdet", &linalg_slogdet, nb::arg("A"));
  m.def("_linalg_cholesky", &linalg_cholesky, nb::arg("A"), nb::arg("upper"));
  m.def("_linalg_qr", &linalg_qr, nb::arg("A"), nb::arg("mode"));
  m.def("_linalg_svd", &linalg_svd, nb::arg("A"), nb::arg("full_matrices"));
  m.def("_linalg_svdvals", &linalg_svdvals, nb::arg("A"));
  m.def("_linalg_eigh", &linalg_eigh, nb::arg("A"), nb::arg("UPLO"));
  m.def("_linalg_eigvalsh", &linalg_eigvalsh, nb::arg("A"), nb::arg("UPLO"));
  m.def("_linalg_pinv", &linalg_pinv, nb::arg("A"), nb::arg("atol").none(), nb::arg("rtol").none());
  m.def("_linalg_lstsq", &linalg_lstsq, nb::arg("A"), nb::arg("B"), nb::arg("rcond").none(), nb::arg("driver"));
}

}  // namespace lucid::py

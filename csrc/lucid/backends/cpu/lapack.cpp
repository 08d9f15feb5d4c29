// LAPACK kernels of the decomposition ops (see lapack.h). The Fortran routines of OpenBLAS are
// declared here (LP64: 32-bit integers, hidden string lengths last, as gfortran passes them);
// typed overloads pick the s/d routine. Every kernel loops over the batch, copying one matrix
// at a time into a column-major buffer, and sizes its workspace once with LAPACK's query call.
#include "lucid/backends/cpu/lapack.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <vector>

#include "lucid/core/linalg_error.h"

extern "C" {
using fstrlen = size_t;
void sgetrf_(const int*, const int*, float*, const int*, int*, int*);
void dgetrf_(const int*, const int*, double*, const int*, int*, int*);
void sgetrs_(const char*, const int*, const int*, const float*, const int*, const int*, float*, const int*, int*, fstrlen);
void dgetrs_(const char*, const int*, const int*, const double*, const int*, const int*, double*, const int*, int*,
             fstrlen);
void sgetri_(const int*, float*, const int*, const int*, float*, const int*, int*);
void dgetri_(const int*, double*, const int*, const int*, double*, const int*, int*);
void spotrf_(const char*, const int*, float*, const int*, int*, fstrlen);
void dpotrf_(const char*, const int*, double*, const int*, int*, fstrlen);
void strtrs_(const char*, const char*, const char*, const int*, const int*, const float*, const int*, float*,
             const int*, int*, fstrlen, fstrlen, fstrlen);
void dtrtrs_(const char*, const char*, const char*, const int*, const int*, const double*, const int*, double*,
             const int*, int*, fstrlen, fstrlen, fstrlen);
void sgeqrf_(const int*, const int*, float*, const int*, float*, float*, const int*, int*);
void dgeqrf_(const int*, const int*, double*, const int*, double*, double*, const int*, int*);
void sorgqr_(const int*, const int*, const int*, float*, const int*, const float*, float*, const int*, int*);
void dorgqr_(const int*, const int*, const int*, double*, const int*, const double*, double*, const int*, int*);
void sgesdd_(const char*, const int*, const int*, float*, const int*, float*, float*, const int*, float*, const int*,
             float*, const int*, int*, int*, fstrlen);
void dgesdd_(const char*, const int*, const int*, double*, const int*, double*, double*, const int*, double*,
             const int*, double*, const int*, int*, int*, fstrlen);
void ssyevd_(const char*, const char*, const int*, float*, const int*, float*, float*, const int*, int*, const int*,
             int*, fstrlen, fstrlen);
void dsyevd_(const char*, const char*, const int*, double*, const int*, double*, double*, const int*, int*,
             const int*, int*, fstrlen, fstrlen);
void sgels_(const char*, const int*, const int*, const int*, float*, const int*, float*, const int*, float*,
            const int*, int*, fstrlen);
void dgels_(const char*, const int*, const int*, const int*, double*, const int*, double*, const int*, double*,
            const int*, int*, fstrlen);
void sgelsd_(const int*, const int*, const int*, float*, const int*, float*, const int*, float*, const float*, int*,
             float*, const int*, int*, int*);
void dgelsd_(const int*, const int*, const int*, double*, const int*, double*, const int*, double*, const double*,
             int*, double*, const int*, int*, int*);
}

namespace lucid::cpu {

namespace {

// ---- typed overloads ----
void getrf(int m, int n, float* a, int lda, int* ipiv, int* info) { sgetrf_(&m, &n, a, &lda, ipiv, info); }
void getrf(int m, int n, double* a, int lda, int* ipiv, int* info) { dgetrf_(&m, &n, a, &lda, ipiv, info); }
void getrs(int n, int k, const float* a, int lda, const int* ipiv, float* b, int ldb, int* info) {
  sgetrs_("N", &n, &k, a, &lda, ipiv, b, &ldb, info, 1);
}
void getrs(int n, int k, const double* a, int lda, const int* ipiv, double* b, int ldb, int* info) {
  dgetrs_("N", &n, &k, a, &lda, ipiv, b, &ldb, info, 1);
}
void getri(int n, float* a, int lda, const int* ipiv, float* w, int lw, int* info) { sgetri_(&n, a, &lda, ipiv, w, &lw, info); }
void getri(int n, double* a, int lda, const int* ipiv, double* w, int lw, int* info) { dgetri_(&n, a, &lda, ipiv, w, &lw, info); }
void potrf(char uplo, int n, float* a, int lda, int* info) { spotrf_(&uplo, &n, a, &lda, info, 1); }
void potrf(char uplo, int n, double* a, int lda, int* info) { dpotrf_(&uplo, &n, a, &lda, info, 1); }
void trtrs(char uplo, char diag, int n, int k, const float* a, int lda, float* b, int ldb, int* info) {
  strtrs_(&uplo, "N", &diag, &n, &k, a, &lda, b, &ldb, info, 1, 1, 1);
}
void trtrs(char uplo, char diag, int n, int k, const double* a, int lda, double* b, int ldb, int* info) {
  dtrtrs_(&uplo, "N", &diag, &n, &k, a, &lda, b, &ldb, info, 1, 1, 1);
}
void geqrf(int m, int n, float* a, int lda, float* tau, float* w, int lw, int* info) { sgeqrf_(&m, &n, a, &lda, tau, w, &lw, info); }
void geqrf(int m, int n, double* a, int lda, double* tau, double* w, int lw, int* info) { dgeqrf_(&m, &n, a, &lda, tau, w, &lw, info); }
void orgqr(int m, int n, int k, float* a, int lda, const float* tau, float* w, int lw, int* info) {
  sorgqr_(&m, &n, &k, a, &lda, tau, w, &lw, info);
}
void orgqr(int m, int n, int k, double* a, int lda, const double* tau, double* w, int lw, int* info) {
  dorgqr_(&m, &n, &k, a, &lda, tau, w, &lw, info);
}
void gesdd(char jobz, int m, int n, float* a, int lda, float* s, float* u, int ldu, float* vt, int ldvt, float* w,
           int lw, int* iw, int* info) {
  sgesdd_(&jobz, &m, &n, a, &lda, s, u, &ldu, vt, &ldvt, w, &lw, iw, info, 1);
}
void gesdd(char jobz, int m, int n, double* a, int lda, double* s, double* u, int ldu, double* vt, int ldvt, double* w,
           int lw, int* iw, int* info) {
  dgesdd_(&jobz, &m, &n, a, &lda, s, u, &ldu, vt, &ldvt, w, &lw, iw, info, 1);
}
void syevd(char jobz, char uplo, int n, float* a, int lda, float* w, float* wk, int lw, int* iw, int liw, int* info) {
  ssyevd_(&jobz, &uplo, &n, a, &lda, w, wk, &lw, iw, &liw, info, 1, 1);
}
void syevd(char jobz, char uplo, int n, double* a, int lda, double* w, double* wk, int lw, int* iw, int liw, int* info) {
  dsyevd_(&jobz, &uplo, &n, a, &lda, w, wk, &lw, iw, &liw, info, 1, 1);
}
void gels(int m, int n, int k, float* a, int lda, float* b, int ldb, float* w, int lw, int* info) {
  sgels_("N", &m, &n, &k, a, &lda, b, &ldb, w, &lw, info, 1);
}
void gels(int m, int n, int k, double* a, int lda, double* b, int ldb, double* w, int lw, int* info) {
  dgels_("N", &m, &n, &k, a, &lda, b, &ldb, w, &lw, info, 1);
}
void gelsd(int m, int n, int k, float* a, int lda, float* b, int ldb, float* s, float rcond, int* rank, float* w,
           int lw, int* iw, int* info) {
  sgelsd_(&m, &n, &k, a, &lda, b, &ldb, s, &rcond, rank, w, &lw, iw, info);
}
void gelsd(int m, int n, int k, double* a, int lda, double* b, int ldb, double* s, double rcond, int* rank, double* w,
           int lw, int* iw, int* info) {
  dgelsd_(&m, &n, &k, a, &lda, b, &ldb, s, &rcond, rank, w, &lw, iw, info);
}

// ---- matrices of a batch ----
int lp_int(int64_t v, const char* op) {
  LUCID_CHECK(v <= INT_MAX, ValueError, op, ": matrix dimension ", v, " exceeds LAPACK's 32-bit limit");
  return static_cast<int>(v);
}
int ld(int64_t rows) { return static_cast<int>(std::max<int64_t>(1, rows)); }

// Element offsets (from data_ptr) of each trailing `core`-dim block of t, in row-major batch order.
std::vector<int64_t> batch_offsets(const Tensor& t, int core) {
  int64_t nb = t.ndim() - core;
  int64_t count = 1;
  for (int64_t d = 0; d < nb; ++d) count *= t.shape()[d];
  std::vector<int64_t> offs(count, 0);
  for (int64_t b = 0; b < count; ++b) {
    int64_t rem = b, off = 0;
    for (int64_t d = nb - 1; d >= 0; --d) {
      off += (rem % t.shape()[d]) * t.strides()[d];
      rem /= t.shape()[d];
    }
    offs[b] = off;
  }
  return offs;
}

int64_t rows_of(const Tensor& t) { return t.shape()[t.ndim() - 2]; }
int64_t cols_of(const Tensor& t) { return t.shape()[t.ndim() - 1]; }

// Matrix b of t (strided) into the column-major buffer dst with leading dimension ldd.
template <class T>
void load(const Tensor& t, int64_t off, T* dst, int64_t ldd) {
  const T* p = t.data<T>() + off;
  int64_t r = rows_of(t), c = cols_of(t), sr = t.strides()[t.ndim() - 2], sc = t.strides()[t.ndim() - 1];
  for (int64_t j = 0; j < c; ++j)
    for (int64_t i = 0; i < r; ++i) dst[i + j * ldd] = p[i * sr + j * sc];
}
// The leading r x c block of a column-major buffer into a contiguous row-major matrix.
template <class T>
void store(const T* src, int64_t lds, int64_t r, int64_t c, T* out) {
  for (int64_t i = 0; i < r; ++i)
    for (int64_t j = 0; j < c; ++j) out[i * c + j] = src[i + j * lds];
}

std::string batch_prefix(const Tensor& A, int64_t b) {
  return A.ndim() > 2 ? str("(Batch element ", b, "): ") : std::string();
}

// Calls f.template operator()<T>() for float32 / float64 inputs.
template <class F>
void by_dtype(const Tensor& A, const char* op, const F& f) {
  if (A.dtype() == DType::Float32) f(float{});
  else if (A.dtype() == DType::Float64) f(double{});
  else throw TypeError(str(op, ": expected a float32 or float64 tensor, got ", dtype_name(A.dtype())));
}

}  // namespace

void lapack_solve(const Tensor& A, const Tensor& B, const Tensor& X) {
  by_dtype(A, "linalg.solve", [&](auto tag) {
    using T = decltype(tag);
    int n = lp_int(rows_of(A), "linalg.solve"), k = lp_int(cols_of(B), "linalg.solve");
    auto oa = batch_offsets(A, 2), ob = batch_offsets(B, 2);
    std::vector<T> a(size_t(ld(n)) * n), bb(size_t(ld(n)) * k);
    std::vector<int> ipiv(std::max(1, n));
    for (size_t b = 0; b < oa.size(); ++b) {
      load(A, oa[b], a.data(), ld(n));
      load(B, ob[b], bb.data(), ld(n));
      int info = 0;
      if (n > 0) getrf(n, n, a.data(), ld(n), ipiv.data(), &info);
      if (info > 0)
        throw LinAlgError(str("linalg.solve: ", batch_prefix(A, b),
                              "The solver failed because the input matrix is singular."));
      if (n > 0 && k > 0) getrs(n, k, a.data(), ld(n), ipiv.data(), bb.data(), ld(n), &info);
      store(bb.data(), ld(n), n, k, X.data<T>() + b * int64_t(n) * k);
    }
  });
}

void lapack_solve_triangular(const Tensor& A, const Tensor& B, bool upper, bool unitriangular, const Tensor& X) {
  by_dtype(A, "linalg.solve_triangular", [&](auto tag) {
    using T = decltype(tag);
    int n = lp_int(rows_of(A), "linalg.solve_triangular"), k = lp_int(cols_of(B), "linalg.solve_triangular");
    auto oa = batch_offsets(A, 2), ob = batch_offsets(B, 2);
    std::vector<T> a(size_t(ld(n)) * n), bb(size_t(ld(n)) * k);
    for (size_t b = 0; b < oa.size(); ++b) {
      load(A, oa[b], a.data(), ld(n));
      load(B, ob[b], bb.data(), ld(n));
      int info = 0;
      // trtrs refuses an exactly zero diagonal; torch (trsm) divides by it, giving inf/nan.
      bool zero_diag = false;
      for (int i = 0; i < n && !unitriangular; ++i) zero_diag |= a[i + size_t(i) * ld(n)] == T(0);
      if (zero_diag) {
        for (int c = 0; c < k; ++c)  // plain substitution, IEEE semantics
          for (int ii = 0; ii < n; ++ii) {
            int i = upper ? n - 1 - ii : ii;
            T s = bb[i + size_t(c) * ld(n)];
            if (upper) for (int j = i + 1; j < n; ++j) s -= a[i + size_t(j) * ld(n)] * bb[j + size_t(c) * ld(n)];
            else for (int j = 0; j < i; ++j) s -= a[i + size_t(j) * ld(n)] * bb[j + size_t(c) * ld(n)];
            bb[i + size_t(c) * ld(n)] = s / a[i + size_t(i) * ld(n)];
          }
      } else if (n > 0 && k > 0) {
        trtrs(upper ? 'U' : 'L', unitriangular ? 'U' : 'N', n, k, a.data(), ld(n), bb.data(), ld(n), &info);
      }
      store(bb.data(), ld(n), n, k, X.data<T>() + b * int64_t(n) * k);
    }
  });
}

void lapack_inv(const Tensor& A, const Tensor& out) {
  by_dtype(A, "linalg.inv", [&](auto tag) {
    using T = decltype(tag);
    int n = lp_int(rows_of(A), "linalg.inv");
    auto oa = batch_offsets(A, 2);
    std::vector<T> a(size_t(ld(n)) * n);
    std::vector<int> ipiv(std::max(1, n));
    T wq = 0;
    int info = 0;
    if (n > 0) getri(n, a.data(), ld(n), ipiv.data(), &wq, -1, &info);
    std::vector<T> work(std::max<size_t>(1, size_t(wq)));
    for (size_t b = 0; b < oa.size(); ++b) {
      load(A, oa[b], a.data(), ld(n));
      if (n > 0) getrf(n, n, a.data(), ld(n), ipiv.data(), &info);
      if (info > 0)
        throw LinAlgError(str("linalg.inv: ", batch_prefix(A, b), "The diagonal element ", info,
                              " is zero, the inversion could not be completed because the input matrix is singular."));
      if (n > 0) getri(n, a.data(), ld(n), ipiv.data(), work.data(), int(work.size()), &info);
      store(a.data(), ld(n), n, n, out.data<T>() + b * int64_t(n) * n);
    }
  });
}

namespace {
// LU of each matrix; f(b, sign of the permutation, diagonal of U).
template <class T, class F>
void for_each_lu(const Tensor& A, const char* op, const F& f) {
  int n = lp_int(rows_of(A), op);
  auto oa = batch_offsets(A, 2);
  std::vector<T> a(size_t(ld(n)) * n), diag(n);
  std::vector<int> ipiv(std::max(1, n));
  for (size_t b = 0; b < oa.size(); ++b) {
    load(A, oa[b], a.data(), ld(n));
    int info = 0;
    if (n > 0) getrf(n, n, a.data(), ld(n), ipiv.data(), &info);
    int sign = 1;
    for (int i = 0; i < n; ++i) {
      if (ipiv[i] != i + 1) sign = -sign;
      diag[i] = a[i + size_t(i) * ld(n)];
    }
    f(b, sign, diag);
  }
}
}  // namespace

void lapack_det(const Tensor& A, const Tensor& det) {
  by_dtype(A, "linalg.det", [&](auto tag) {
    using T = decltype(tag);
    for_each_lu<T>(A, "linalg.det", [&](size_t b, int sign, const std::vector<T>& d) {
      T p = T(sign);
      for (T v : d) p *= v;
      det.data<T>()[b] = p;
    });
  });
}

void lapack_slogdet(const Tensor& A, const Tensor& sign, const Tensor& logabsdet) {
  by_dtype(A, "linalg.slogdet", [&](auto tag) {
    using T = decltype(tag);
    for_each_lu<T>(A, "linalg.slogdet", [&](size_t b, int sg, const std::vector<T>& d) {
      T s = T(sg), l = 0;
      for (T v : d) {
        if (v < 0) s = -s;
        if (v == 0) s = 0;
        l += std::log(std::abs(v));
      }
      sign.data<T>()[b] = s;
      logabsdet.data<T>()[b] = l;
    });
  });
}

void lapack_cholesky(const Tensor& A, bool upper, const Tensor& L) {
  by_dtype(A, "linalg.cholesky", [&](auto tag) {
    using T = decltype(tag);
    int n = lp_int(rows_of(A), "linalg.cholesky");
    auto oa = batch_offsets(A, 2);
    std::vector<T> a(size_t(ld(n)) * n);
    for (size_t b = 0; b < oa.size(); ++b) {
      load(A, oa[b], a.data(), ld(n));
      int info = 0;
      if (n > 0) potrf(upper ? 'U' : 'L', n, a.data(), ld(n), &info);
      if (info > 0)
        throw LinAlgError(str("linalg.cholesky: ", batch_prefix(A, b),
                              "The factorization could not be completed because the input is not positive-definite "
                              "(the leading minor of order ", info, " is not positive-definite)."));
      for (int j = 0; j < n; ++j)  // zero the other triangle
        for (int i = 0; i < n; ++i)
          if (upper ? i > j : i < j) a[i + size_t(j) * ld(n)] = 0;
      store(a.data(), ld(n), n, n, L.data<T>() + b * int64_t(n) * n);
    }
  });
}

void lapack_qr(const Tensor& A, const std::string& mode, const Tensor& Q, const Tensor& R) {
  by_dtype(A, "linalg.qr", [&](auto tag) {
    using T = decltype(tag);
    int m = lp_int(rows_of(A), "linalg.qr"), n = lp_int(cols_of(A), "linalg.qr"), k = std::min(m, n);
    bool complete = mode == "complete", want_q = mode != "r";
    int qc = complete ? m : k;  // columns of Q
    int wc = std::max(n, qc);   // columns of the work matrix (A, then Q in place)
    auto oa = batch_offsets(A, 2);
    std::vector<T> a(size_t(ld(m)) * std::max(1, wc)), tau(std::max(1, k));
    T wq1 = 0, wq2 = 0;
    int info = 0;
    if (k > 0) geqrf(m, n, a.data(), ld(m), tau.data(), &wq1, -1, &info);
    if (want_q && qc > 0 && m > 0) orgqr(m, qc, k, a.data(), ld(m), tau.data(), &wq2, -1, &info);
    std::vector<T> work(std::max<size_t>(1, size_t(std::max(wq1, wq2))));
    for (size_t b = 0; b < oa.size(); ++b) {
      load(A, oa[b], a.data(), ld(m));
      if (k > 0) geqrf(m, n, a.data(), ld(m), tau.data(), work.data(), int(work.size()), &info);
      T* r = R.data<T>() + b * int64_t(R.shape()[R.ndim() - 2]) * n;
      int rr = complete ? m : k;  // rows of R
      for (int i = 0; i < rr; ++i)
        for (int j = 0; j < n; ++j) r[int64_t(i) * n + j] = (i <= j && i < k) ? a[i + size_t(j) * ld(m)] : T(0);
      if (!want_q) continue;
      if (k > 0) orgqr(m, qc, k, a.data(), ld(m), tau.data(), work.data(), int(work.size()), &info);
      else  // no reflectors: Q is the identity
        for (int j = 0; j < qc; ++j)
          for (int i = 0; i < m; ++i) a[i + size_t(j) * ld(m)] = T(i == j);
      store(a.data(), ld(m), m, qc, Q.data<T>() + b * int64_t(m) * qc);
    }
  });
}

void lapack_svd(const Tensor& A, bool full_matrices, bool compute_uv, const Tensor& U, const Tensor& S,
                const Tensor& Vh) {
  by_dtype(A, "linalg.svd", [&](auto tag) {
    using T = decltype(tag);
    int m = lp_int(rows_of(A), "linalg.svd"), n = lp_int(cols_of(A), "linalg.svd"), k = std::min(m, n);
    char jobz = !compute_uv ? 'N' : full_matrices ? 'A' : 'S';
    int ucols = full_matrices ? m : k, vrows = full_matrices ? n : k;
    auto oa = batch_offsets(A, 2);
    std::vector<T> a(size_t(ld(m)) * std::max(1, n)), s(std::max(1, k));
    std::vector<T> u(compute_uv ? size_t(ld(m)) * std::max(1, ucols) : 1);
    std::vector<T> vt(compute_uv ? size_t(ld(vrows)) * std::max(1, n) : 1);
    std::vector<int> iwork(8 * std::max(1, k));
    T wq = 0;
    int info = 0;
    if (k > 0)
      gesdd(jobz, m, n, a.data(), ld(m), s.data(), u.data(), ld(m), vt.data(), ld(vrows), &wq, -1, iwork.data(), &info);
    std::vector<T> work(std::max<size_t>(1, size_t(wq)));
    for (size_t b = 0; b < oa.size(); ++b) {
      if (k > 0) {
        load(A, oa[b], a.data(), ld(m));
        gesdd(jobz, m, n, a.data(), ld(m), s.data(), u.data(), ld(m), vt.data(), ld(vrows), work.data(),
              int(work.size()), iwork.data(), &info);
        if (info > 0)
          throw LinAlgError(str("linalg.svd: ", batch_prefix(A, b),
                                "The algorithm failed to converge because the input matrix is ill-conditioned or has "
                                "too many repeated singular values (error code: ", info, ")."));
      } else if (compute_uv) {  // an empty matrix: U and Vh are identities
        std::fill(u.begin(), u.end(), T(0));
        std::fill(vt.begin(), vt.end(), T(0));
        for (int i = 0; i < std::min(m, ucols); ++i) u[i + size_t(i) * ld(m)] = 1;
        for (int i = 0; i < std::min(vrows, n); ++i) vt[i + size_t(i) * ld(vrows)] = 1;
      }
      std::memcpy(S.data<T>() + b * int64_t(k), s.data(), sizeof(T) * k);
      if (!compute_uv) continue;
      store(u.data(), ld(m), m, ucols, U.data<T>() + b * int64_t(m) * ucols);
      store(vt.data(), ld(vrows), vrows, n, Vh.data<T>() + b * int64_t(vrows) * n);
    }
  });
}

void lapack_eigh(const Tensor& A, bool upper, bool compute_v, const Tensor& L, const Tensor& V) {
  by_dtype(A, "linalg.eigh", [&](auto tag) {
    using T = decltype(tag);
    int n = lp_int(rows_of(A), "linalg.eigh");
    char jobz = compute_v ? 'V' : 'N', uplo = upper ? 'U' : 'L';
    auto oa = batch_offsets(A, 2);
    std::vector<T> a(size_t(ld(n)) * std::max(1, n)), w(std::max(1, n));
    T wq = 0;
    int iwq = 0, info = 0;
    if (n > 0) syevd(jobz, uplo, n, a.data(), ld(n), w.data(), &wq, -1, &iwq, -1, &info);
    std::vector<T> work(std::max<size_t>(1, size_t(wq)));
    std::vector<int> iwork(std::max(1, iwq));
    for (size_t b = 0; b < oa.size(); ++b) {
      load(A, oa[b], a.data(), ld(n));
      if (n > 0)
        syevd(jobz, uplo, n, a.data(), ld(n), w.data(), work.data(), int(work.size()), iwork.data(), int(iwork.size()),
              &info);
      if (info > 0)
        throw LinAlgError(str("linalg.eigh: ", batch_prefix(A, b),
                              "The algorithm failed to converge because the input matrix is ill-conditioned or has "
                              "too many repeated eigenvalues (error code: ", info, ")."));
      std::memcpy(L.data<T>() + b * int64_t(n), w.data(), sizeof(T) * n);
      if (compute_v) store(a.data(), ld(n), n, n, V.data<T>() + b * int64_t(n) * n);
    }
  });
}

void lapack_lstsq(const Tensor& A, const Tensor& B, double rcond, const std::string& driver, const Tensor& X,
                  const Tensor& rank, const Tensor& S) {
  by_dtype(A, "linalg.lstsq", [&](auto tag) {
    using T = decltype(tag);
    int m = lp_int(rows_of(A), "linalg.lstsq"), n = lp_int(cols_of(A), "linalg.lstsq"),
        k = lp_int(cols_of(B), "linalg.lstsq"), mn = std::min(m, n), ldb = ld(std::max(m, n));
    bool use_gels = driver == "gels";
    auto oa = batch_offsets(A, 2), ob = batch_offsets(B, 2);
    std::vector<T> a(size_t(ld(m)) * std::max(1, n)), bb(size_t(ldb) * std::max(1, k)), s(std::max(1, mn));
    T wq = 0;
    int iwq = 0, info = 0, rk = 0;
    bool call = mn > 0 && k > 0;
    if (call && use_gels) gels(m, n, k, a.data(), ld(m), bb.data(), ldb, &wq, -1, &info);
    if (call && !use_gels)
      gelsd(m, n, k, a.data(), ld(m), bb.data(), ldb, s.data(), T(rcond), &rk, &wq, -1, &iwq, &info);
    std::vector<T> work(std::max<size_t>(1, size_t(wq)));
    std::vector<int> iwork(std::max(1, iwq));
    for (size_t b = 0; b < oa.size(); ++b) {
      load(A, oa[b], a.data(), ld(m));
      std::fill(bb.begin(), bb.end(), T(0));
      load(B, ob[b], bb.data(), ldb);
      rk = 0;
      if (call && use_gels) {
        gels(m, n, k, a.data(), ld(m), bb.data(), ldb, work.data(), int(work.size()), &info);
        if (info > 0)
          throw LinAlgError(str("linalg.lstsq: ", batch_prefix(A, b),
                                "The least squares solution could not be computed because the input matrix does not "
                                "have full rank (error code: ", info, ")."));
      } else if (call) {
        gelsd(m, n, k, a.data(), ld(m), bb.data(), ldb, s.data(), T(rcond), &rk, work.data(), int(work.size()),
              iwork.data(), &info);
        if (info > 0)
          throw LinAlgError(str("linalg.lstsq: ", batch_prefix(A, b),
                                "The algorithm failed to converge (error code: ", info, ")."));
      } else {
        std::fill(s.begin(), s.end(), T(0));
        std::fill(bb.begin(), bb.end(), T(0));  // an empty A: the minimum-norm solution is 0
      }
      store(bb.data(), ldb, n, k, X.data<T>() + b * int64_t(n) * k);
      if (rank.numel() > 0) rank.data<int64_t>()[b] = rk;
      if (S.numel() > 0) std::memcpy(S.data<T>() + b * int64_t(mn), s.data(), sizeof(T) * mn);
    }
  });
}

}  // namespace lucid::cpu

"""lucid.backends.cuda: torch.backends.cuda's matmul switch. `matmul.allow_tf32` (default False,
as torch) lets float32 GEMMs on CUDA (cuBLASLt) use TF32 tensor cores. It is the float32 matmul
precision seen as a bool, as in torch: True sets lucid.set_float32_matmul_precision('high'), False
'highest', and it reads True for 'high' or 'medium'. CPU GEMMs are always full float32."""
from lucid import _C

__all__ = ["matmul"]


class _CudaMatmulSettings:
    __slots__ = ()

    @property
    def allow_tf32(self):
        return _C._get_float32_matmul_precision() != "highest"

    @allow_tf32.setter
    def allow_tf32(self, value):
        _C._set_float32_matmul_precision("high" if value else "highest")

    def __repr__(self):
        return f"lucid.backends.cuda.matmul(allow_tf32={self.allow_tf32})"


matmul = _CudaMatmulSettings()

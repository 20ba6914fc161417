"""Tests of ``sklearn_vb._core`` (public through ``sklearn_vb.base``) and of what the
package does when it is imported."""

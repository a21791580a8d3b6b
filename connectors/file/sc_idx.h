/* sc_idx.h — IDX files (the MNIST family's format, plain or gzip) into
 * in-memory data sets, and Fashion-MNIST from its folder. */
#ifndef SC_IDX_H
#define SC_IDX_H

#include <stddef.h>

#include "sc_data.h"
#include "sc_err.h"

/* Debian's dataset-fashion-mnist package installs the IDX files here. */
#define SC_FMNIST_DIR "/usr/share/datasets/fashion-mnist"

/* Reads an image file (unsigned-byte IDX with 3 dims (n, h, w) -> sample
 * shape (1, h, w), or 4 dims (n, c, h, w)) and its label file (unsigned-byte
 * IDX with 1 dim (n)) into ds, scaling pixels to [0, 1]. Either file may be
 * gzip-compressed. Labels must lie in [0, n_classes) and the two counts must
 * agree; errors name the file (and the sample for a bad label). ds must be
 * zeroed or freed; on failure it stays zeroed, on success the caller frees it
 * with sc_dataset_free(). */
sc_err_t sc_idx_load(sc_dataset_t *ds, const char *images, const char *labels, int n_classes,
                     char *errstr, size_t errstr_size);

/* sc_idx_load with the normalization of a decoder: each byte b becomes
 * (b * scale - mean) / std (sc_idx_load: scale 1/255, mean 0, std 1). */
sc_err_t sc_idx_load_norm(sc_dataset_t *ds, const char *images, const char *labels, int n_classes,
                          float scale, float mean, float std, char *errstr, size_t errstr_size);

/* Loads Fashion-MNIST's training set (train-images-idx3-ubyte[.gz],
 * train-labels-idx1-ubyte[.gz]) and test set (t10k-...) from dir (NULL or ""
 * = SC_FMNIST_DIR), 10 classes, pixels in [0, 1]. train or test may be NULL
 * to skip that half. On failure neither is left allocated. */
sc_err_t sc_fmnist_load(const char *dir, sc_dataset_t *train, sc_dataset_t *test, char *errstr,
                        size_t errstr_size);

#endif

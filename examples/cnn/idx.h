/* Loading a data set in the IDX format (MNIST's and Fashion-MNIST's): an
   images file (magic 0x00000803: count, rows, cols, then unsigned bytes) and
   a labels file (0x00000801: count, then one byte each). The bytes go
   straight from the file into mmb arrays in the capacity tier. */
#ifndef CNN_IDX_H
#define CNN_IDX_H

#include <mmb/mmb.h>

#include <stddef.h>

typedef struct cnn_dataset {
  size_t n, rows, cols;   /* n images of rows x cols grey levels */
  size_t classes;         /* labels are below this */
  mmbArray *images;       /* [n, rows * cols] bytes */
  mmbArray *labels;       /* [n] bytes */
} cnn_dataset;

/* Loads DIR/PREFIX-images-idx3-ubyte and DIR/PREFIX-labels-idx1-ubyte
   (PREFIX "train" or "t10k") into arrays of `home`. Every defect of the
   files (missing, wrong magic, short or long, counts that disagree, a label
   >= classes, a zero count) is refused with a message in `err`.
   Returns MMB_OK; MMB_IO for a file defect; an mmb error otherwise (err
   says which call failed). Nothing is left allocated on failure. */
mmbError cnn_dataset_load(const char *dir, const char *prefix, size_t classes,
                          mmbMemInterface *home, cnn_dataset *out, char *err, size_t err_len);

/* The same, as bytes in memory (for tests and for tools that fetch data
   themselves); `name` labels the messages. */
mmbError cnn_dataset_from_memory(const void *images, size_t images_len, const void *labels,
                                 size_t labels_len, size_t classes, mmbMemInterface *home,
                                 cnn_dataset *out, char *err, size_t err_len);

mmbError cnn_dataset_destroy(cnn_dataset *ds);

/* An empty data set of images shaped as `like`'s, n of them (0: as many as
   `like` has), in `home`. */
mmbError cnn_dataset_like(const cnn_dataset *like, size_t n, mmbMemInterface *home,
                          cnn_dataset *out);

/* dst item i = src item order[i], for each of dst's items (host memory on
   both sides). */
void cnn_dataset_gather(const cnn_dataset *src, const size_t *order, cnn_dataset *dst);

#endif /* CNN_IDX_H */

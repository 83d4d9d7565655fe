/* IDX loading: the header is checked against the file's length before a
   byte of the payload is read, so a defect is a message, never a crash. */
#include "idx.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

enum { IMAGES_MAGIC = 0x00000803, LABELS_MAGIC = 0x00000801, MAX_HEAD = 16 };

static mmbError refuse(char *err, size_t err_len, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, err_len, fmt, ap);
  va_end(ap);
  return MMB_IO;
}

static uint32_t be32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* One IDX file's header: its magic says unsigned bytes and `ndims`
   dimensions, and the payload is exactly what they multiply to. */
typedef struct idx_file {
  const char *name;
  size_t ndims, dims[3], payload, head;
} idx_file;

static mmbError parse_header(idx_file *f, const uint8_t *head, size_t have, size_t total,
                             uint32_t magic, char *err, size_t err_len) {
  size_t ndims = magic & 0xff;
  f->head = 4 + 4 * ndims;
  if (have < 4 || total < 4) return refuse(err, err_len, "%s: shorter than an IDX header", f->name);
  if (be32(head) != magic)
    return refuse(err, err_len, "%s: magic 0x%08x, expected 0x%08x (%s)", f->name, be32(head),
                  magic, magic == IMAGES_MAGIC ? "unsigned-byte images" : "unsigned-byte labels");
  if (have < f->head || total < f->head)
    return refuse(err, err_len, "%s: header cut short", f->name);
  f->ndims = ndims;
  f->payload = 1;
  for (size_t d = 0; d < ndims; d++) {
    f->dims[d] = be32(head + 4 + 4 * d);
    if (f->dims[d] == 0) return refuse(err, err_len, "%s: dimension %zu is zero", f->name, d);
    f->payload *= f->dims[d];   /* at most 3 factors below 2^32: no overflow in 64 bits */
  }
  if (total - f->head < f->payload)
    return refuse(err, err_len, "%s: %zu bytes of data, the header promises %zu (file cut short)",
                  f->name, total - f->head, f->payload);
  if (total - f->head > f->payload)
    return refuse(err, err_len, "%s: %zu bytes after the data the header describes", f->name,
                  total - f->head - f->payload);
  return MMB_OK;
}

static mmbError check_pair(const idx_file *img, const idx_file *lab, size_t classes,
                           const uint8_t *labels, char *err, size_t err_len) {
  if (img->dims[0] != lab->dims[0])
    return refuse(err, err_len, "%s has %zu images but %s has %zu labels", img->name, img->dims[0],
                  lab->name, lab->dims[0]);
  for (size_t i = 0; i < lab->dims[0]; i++)
    if (labels[i] >= classes)
      return refuse(err, err_len, "%s: label %u of item %zu is not below %zu", lab->name,
                    labels[i], i, classes);
  return MMB_OK;
}

static mmbError make_array(const mmbDimensions *dims, mmbMemInterface *home, mmbArray **out) {
  mmbLayout *layout;
  mmbError e = mmb_layout_create_regular_nd(1, dims->size, MMB_ROWMAJOR, (mmbLayoutPadding){0},
                                            &layout);
  if (e != MMB_OK) return e;
  e = mmb_array_create(dims, layout, home, MMB_READ_WRITE, out);
  mmbError d = mmb_layout_destroy(layout);
  return e != MMB_OK ? e : d;
}

static mmbError make_arrays(const idx_file *img, const idx_file *lab, size_t classes,
                            mmbMemInterface *home, cnn_dataset *ds, char *err, size_t err_len) {
  *ds = (cnn_dataset){.n = img->dims[0], .rows = img->dims[1], .cols = img->dims[2],
                      .classes = classes};
  mmbError e = make_array(&(mmbDimensions){2, {ds->n, ds->rows * ds->cols}}, home, &ds->images);
  if (e == MMB_OK) e = make_array(&(mmbDimensions){1, {ds->n}}, home, &ds->labels);
  if (e == MMB_OK && (!mmb_array_ptr(ds->images) || !mmb_array_ptr(ds->labels)))
    e = MMB_UNSUPPORTED;
  if (e != MMB_OK) {
    snprintf(err, err_len, "no room for the data set in the capacity tier: %s",
             mmb_error_string(e));
    cnn_dataset_destroy(ds);
  }
  return e;
}

mmbError cnn_dataset_like(const cnn_dataset *like, size_t n, mmbMemInterface *home,
                          cnn_dataset *out) {
  if (!n) n = like->n;
  idx_file img = {.dims = {n, like->rows, like->cols}};
  idx_file lab = {.dims = {n}};
  char ignored[128];
  return make_arrays(&img, &lab, like->classes, home, out, ignored, sizeof ignored);
}

void cnn_dataset_gather(const cnn_dataset *src, const size_t *order, cnn_dataset *dst) {
  size_t px = src->rows * src->cols;
  const uint8_t *si = mmb_array_ptr(src->images), *sl = mmb_array_ptr(src->labels);
  uint8_t *di = mmb_array_ptr(dst->images), *dl = mmb_array_ptr(dst->labels);
  for (size_t i = 0; i < dst->n; i++) {
    memcpy(di + i * px, si + order[i] * px, px);
    dl[i] = sl[order[i]];
  }
}

mmbError cnn_dataset_from_memory(const void *images, size_t images_len, const void *labels,
                                 size_t labels_len, size_t classes, mmbMemInterface *home,
                                 cnn_dataset *out, char *err, size_t err_len) {
  idx_file img = {.name = "images"}, lab = {.name = "labels"};
  mmbError e = parse_header(&img, images, images_len, images_len, IMAGES_MAGIC, err, err_len);
  if (e == MMB_OK) e = parse_header(&lab, labels, labels_len, labels_len, LABELS_MAGIC, err, err_len);
  if (e == MMB_OK)
    e = check_pair(&img, &lab, classes, (const uint8_t *)labels + lab.head, err, err_len);
  cnn_dataset ds;
  if (e == MMB_OK) e = make_arrays(&img, &lab, classes, home, &ds, err, err_len);
  if (e != MMB_OK) return e;
  memcpy(mmb_array_ptr(ds.images), (const uint8_t *)images + img.head, img.payload);
  memcpy(mmb_array_ptr(ds.labels), (const uint8_t *)labels + lab.head, lab.payload);
  *out = ds;
  return MMB_OK;
}

/* Opens DIR/PREFIX-KIND-idxN-ubyte and checks its header against its size. */
static mmbError open_idx(const char *dir, const char *prefix, const char *kind, uint32_t magic,
                         char *path, size_t path_len, idx_file *f, FILE **out, char *err,
                         size_t err_len) {
  snprintf(path, path_len, "%s/%s-%s-idx%u-ubyte", dir, prefix, kind, (unsigned)(magic & 0xff));
  f->name = path;
  FILE *fp = fopen(path, "rb");
  if (!fp) return refuse(err, err_len, "%s: %s", path, strerror(errno));
  struct stat st;
  uint8_t head[MAX_HEAD];
  size_t have = fread(head, 1, sizeof head, fp);
  mmbError e = fstat(fileno(fp), &st) != 0 ? refuse(err, err_len, "%s: %s", path, strerror(errno))
                                           : parse_header(f, head, have, (size_t)st.st_size, magic,
                                                          err, err_len);
  if (e == MMB_OK && fseek(fp, (long)f->head, SEEK_SET) != 0)
    e = refuse(err, err_len, "%s: %s", path, strerror(errno));
  if (e != MMB_OK) {
    fclose(fp);
    return e;
  }
  *out = fp;
  return MMB_OK;
}

static mmbError read_payload(FILE *fp, const idx_file *f, void *dst, char *err, size_t err_len) {
  if (fread(dst, 1, f->payload, fp) != f->payload)
    return refuse(err, err_len, "%s: read failed after the header", f->name);
  return MMB_OK;
}

mmbError cnn_dataset_load(const char *dir, const char *prefix, size_t classes,
                          mmbMemInterface *home, cnn_dataset *out, char *err, size_t err_len) {
  char img_path[4096], lab_path[4096];
  idx_file img = {0}, lab = {0};
  FILE *fi = NULL, *fl = NULL;
  mmbError e = open_idx(dir, prefix, "images", IMAGES_MAGIC, img_path, sizeof img_path, &img, &fi,
                        err, err_len);
  if (e == MMB_OK)
    e = open_idx(dir, prefix, "labels", LABELS_MAGIC, lab_path, sizeof lab_path, &lab, &fl, err,
                 err_len);
  cnn_dataset ds = {0};
  if (e == MMB_OK) e = make_arrays(&img, &lab, classes, home, &ds, err, err_len);
  if (e == MMB_OK) e = read_payload(fi, &img, mmb_array_ptr(ds.images), err, err_len);
  if (e == MMB_OK) e = read_payload(fl, &lab, mmb_array_ptr(ds.labels), err, err_len);
  if (e == MMB_OK) e = check_pair(&img, &lab, classes, mmb_array_ptr(ds.labels), err, err_len);
  if (fi) fclose(fi);
  if (fl) fclose(fl);
  if (e != MMB_OK) {
    cnn_dataset_destroy(&ds);
    return e;
  }
  *out = ds;
  return MMB_OK;
}

mmbError cnn_dataset_destroy(cnn_dataset *ds) {
  mmbError e = MMB_OK, e2 = MMB_OK;
  if (ds->images) e = mmb_array_destroy(ds->images);
  if (ds->labels) e2 = mmb_array_destroy(ds->labels);
  ds->images = ds->labels = NULL;
  return e != MMB_OK ? e : e2;
}

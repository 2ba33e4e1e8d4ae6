"""CDL of our own CFA-0.6.2 aggregation files, one per situation the
convention's examples cover (docs/conventions/cfa-0.6.md): two external
fragments with a size-1 dimension (1a), an unknown extra term (1b), a
substitution (1c), an in-file fragment with other units (2), term variables
in a group with a fragment shape defect (3), several versions per fragment
and a wrong declared shape (4), term variables that do not exist (5), a
discrete-sampling layout whose carrier attributes are set repeatedly (6) and
a packed aggregation variable with fragments in a group (7).

Written for this project (values, names and layout are ours); the defects
are deliberate. make_cf_cases.py turns each text into a file with ncgen.
"""

_COORDS = """  double time(time) ; time:units = "days since 2001-01-01" ; time:axis = "T" ;
  double level(level) ; level:units = "m" ; level:positive = "up" ;
  double latitude(latitude) ; latitude:units = "degrees_north" ;
  double longitude(longitude) ; longitude:units = "degrees_east" ;
"""
_GRID_DIMS = "time = 12 ; level = 1 ; latitude = 73 ; longitude = 144 ;"
_TIMES = "0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334"
_TEMP = """  double temp ; temp:standard_name = "air_temperature" ; temp:units = "K" ;
    temp:aggregated_dimensions = "time level latitude longitude" ;
"""


def _terms(location, file, fmt, address, extra=""):
    return f'    temp:aggregated_data = "location: {location} file: {file} format: {fmt} address: {address}{extra}" ;\n'


def two_halves(files=("January-June.nc", "July-December.nc"), addresses=("temp", "temp"),
               substitution=None, tracking=False):
    """Example 1a and its variants: time split 6 + 6, level omitted by the
    second fragment's file. None in files/addresses: a missing fragment.
    `substitution`: the ${BASE} replacement text (1c); `tracking`: an extra
    non-standard term naming fragment_id (1b)."""
    extra = " tracking_id: fragment_id" if tracking else ""
    prefix = "${BASE}" if substitution else ""

    def listed(values, prefix=""):
        return ", ".join('"' + prefix + v + '"' if v is not None else "_" for v in values)
    names = listed(files, prefix)
    addresses = listed(addresses)
    return f"""netcdf halves {{
dimensions: {_GRID_DIMS} f_time = 2 ; f_level = 1 ; f_latitude = 1 ; f_longitude = 1 ; i = 4 ; j = 2 ;
variables:
{_TEMP}{_terms("aggregation_location", "aggregation_file", "aggregation_format", "aggregation_address", extra)}{_COORDS}  int aggregation_location(i, j) ;
  string aggregation_file(f_time, f_level, f_latitude, f_longitude) ;
{'  aggregation_file:substitutions = "${BASE}: ' + substitution + '" ;' if substitution else ''}
  string aggregation_format ;
  string aggregation_address(f_time, f_level, f_latitude, f_longitude) ;
{'  string fragment_id(f_time, f_level, f_latitude, f_longitude) ;' if tracking else ''}
:Conventions = "CF-1.10 CFA-0.6.2" ;
:title = "two half-year fragments" ;
data:
  time = {_TIMES} ;
  aggregation_location = 6, 6, 1, _, 73, _, 144, _ ;
  aggregation_file = {names} ;
  aggregation_format = "nc" ;
  aggregation_address = {addresses} ;
{'  fragment_id = "run-0001", "run-0002" ;' if tracking else ''}
}}
"""


def swapped_versions():
    """Example 1a with two versions of the first fragment (a trailing
    dimension k, A13: the first whose file exists wins): swapped/January-June.nc,
    where `swapped` is a symlink leading out of the allowed roots, then
    January-June.nc beside the aggregation file."""
    return f"""netcdf swapped {{
dimensions: {_GRID_DIMS} f_time = 2 ; f_level = 1 ; f_latitude = 1 ; f_longitude = 1 ; i = 4 ; j = 2 ; k = 2 ;
variables:
{_TEMP}{_terms("aggregation_location", "aggregation_file", "aggregation_format", "aggregation_address")}{_COORDS}  int aggregation_location(i, j) ;
  string aggregation_file(f_time, f_level, f_latitude, f_longitude, k) ;
  string aggregation_format ;
  string aggregation_address(f_time, f_level, f_latitude, f_longitude, k) ;
:Conventions = "CF-1.10 CFA-0.6.2" ;
data:
  time = {_TIMES} ;
  aggregation_location = 6, 6, 1, _, 73, _, 144, _ ;
  aggregation_file = "swapped/January-June.nc", "January-June.nc", "July-December.nc", _ ;
  aggregation_format = "nc" ;
  aggregation_address = "temp", "temp", "temp", _ ;
}}
"""


def in_file_second_half():
    """Example 2: the second half is the aggregation file's own temp2
    (degreesC, the level dimension omitted), a few values then fill."""
    return f"""netcdf in_file {{
dimensions: {_GRID_DIMS} time2 = 6 ; f_time = 2 ; f_level = 1 ; f_latitude = 1 ; f_longitude = 1 ; i = 4 ; j = 2 ;
variables:
{_TEMP}{_terms("aggregation_location", "aggregation_file", "aggregation_format", "aggregation_address")}{_COORDS}  int aggregation_location(i, j) ;
  string aggregation_file(f_time, f_level, f_latitude, f_longitude) ;
  string aggregation_format ;
  string aggregation_address(f_time, f_level, f_latitude, f_longitude) ;
  double temp2(time2, latitude, longitude) ; temp2:units = "degreesC" ;
:Conventions = "CF-1.10 CFA-0.6.2" ;
data:
  time = {_TIMES} ;
  aggregation_location = 6, 6, 1, _, 73, _, 144, _ ;
  aggregation_file = "January-June.nc", _ ;
  aggregation_format = "nc" ;
  aggregation_address = "temp", "temp2" ;
  temp2 = {_few_then_fill([12.25, 9.5, 1.0, -3.75, -7.5, -11.0], 6 * 73 * 144)} ;
}}
"""


def _few_then_fill(values, n):
    """A full data list (ncgen aborts on a short one): values, then fill."""
    return ", ".join([str(v) for v in values] + ["_"] * (n - len(values)))


def grouped_shape_defect():
    """Example 3: term variables and in-file fragments in the group
    /aggregation; the fragments span the whole year (12, 73, 144) although
    each is placed on six months: a defect the reader must report."""
    return f"""netcdf grouped {{
dimensions: {_GRID_DIMS}
variables:
{_TEMP}{_terms("/aggregation/location", "/aggregation/file", "/aggregation/format", "/aggregation/address")}{_COORDS}:Conventions = "CF-1.10 CFA-0.6.2" ;
data:
  time = {_TIMES} ;
group: aggregation {{
  dimensions: f_time = 2 ; f_level = 1 ; f_latitude = 1 ; f_longitude = 1 ; i = 4 ; j = 2 ;
  variables:
    int location(i, j) ;
    string file(f_time, f_level, f_latitude, f_longitude) ;
    string format ;
    string address(f_time, f_level, f_latitude, f_longitude) ;
    double temp1(time, latitude, longitude) ; temp1:units = "K" ;
    double temp2(time, latitude, longitude) ; temp2:units = "degreesC" ;
  data:
    location = 6, 6, 1, _, 73, _, 144, _ ;
    file = _, _ ;
    format = _ ;
    address = "temp1", "temp2" ;
}}
}}
"""


def versions_and_defects():
    """Example 4: hemispheres split 36 + 37, two versions per fragment (a
    trailing dimension k), an in-file fragment of the wrong shape, and names
    that exist nowhere on this machine."""
    return f"""netcdf versions {{
dimensions: {_GRID_DIMS}
variables:
{_TEMP}{_terms("/aggregation/location", "/aggregation/file", "/aggregation/format", "/aggregation/address")}{_COORDS}:Conventions = "CF-1.10 CFA-0.6.2" ;
data:
  time = {_TIMES} ;
group: aggregation {{
  dimensions: f_time = 2 ; f_level = 1 ; f_latitude = 2 ; f_longitude = 1 ; i = 4 ; j = 2 ; k = 2 ;
  variables:
    int location(i, j) ;
    string file(f_time, f_level, f_latitude, f_longitude, k) ;
    string format ;
    string address(f_time, f_level, f_latitude, f_longitude, k) ;
    double temp2(time, latitude, longitude) ; temp2:units = "degreesC" ;
  data:
    location = 6, 6, 1, _, 36, 37, 144, _ ;
    file = "/remote/January-June_SH.nc", _, _, _,
           "/local/January-June_NH.nc", "/remote/January-June_NH.nc", "/remote/July-December_NH.nc", _ ;
    format = "nc" ;
    address = "tas_sh", _, "temp2", _, "tas_nh", "tas_nh_v2", "tas_nh", _ ;
}}
}}
"""


def missing_term_variables():
    """Example 5: aggregated_data names term variables that do not exist."""
    return f"""netcdf missing_terms {{
dimensions: {_GRID_DIMS} f_time = 2 ; f_level = 1 ; f_latitude = 1 ; f_longitude = 1 ; i = 4 ; j = 2 ;
variables:
{_TEMP}{_terms("/terms/location", "/terms/no_such_file", "aggregation_format", "/terms/address")}{_COORDS}  string aggregation_format ;
:Conventions = "CF-1.10 CFA-0.6.2" ;
data:
  time = {_TIMES} ;
  aggregation_format = "nc" ;
group: terms {{
  dimensions: f_time = 2 ; f_level = 1 ; f_latitude = 1 ; f_longitude = 1 ; i = 4 ; j = 2 ;
  variables:
    int location(i, j) ;
    string address(f_time, f_level, f_latitude, f_longitude) ;
  data:
    location = 6, 6, 1, _, 73, _, 144, _ ;
    address = "temp", "temp" ;
}}
}}
"""


def stations_repeated_attributes():
    """Example 6: three stations' time series along a sample dimension
    obs = 15; every carrier sets *temp's* aggregation attributes (a slip), so
    the last setting wins: sizes 1, 1, 1 against obs = 15."""
    def carrier(location, address):
        return (f'    temp:aggregated_dimensions = "obs" ;\n'
                f'    temp:aggregated_data = "location: {location} file: st_file format: st_format address: {address}" ;\n')
    return f"""netcdf stations {{
dimensions: station = 3 ; obs = 15 ; f_station = 3 ; i = 1 ; j = 3 ;
variables:
  float temp(obs) ; temp:units = "degC" ; temp:coordinates = "time lat lon" ;
{carrier("st_location", "st_address_temp")}  float time ; time:units = "days since 1990-01-01" ;
{carrier("st_location", "st_address_time")}  float lon(station) ; lon:units = "degrees_east" ;
{carrier("st_location_ll", "st_address_lon")}  float lat(station) ; lat:units = "degrees_north" ;
{carrier("st_location_ll", "st_address_lat")}  int count(station) ; count:sample_dimension = "obs" ;
  int st_location(i, j) ;
  int st_location_ll(i, j) ;
  string st_file(f_station) ;
  string st_format ;
  string st_address_temp(f_station) ;
  string st_address_time(f_station) ;
  string st_address_lat(f_station) ;
  string st_address_lon(f_station) ;
:Conventions = "CF-1.10 CFA-0.6.2" ;
:featureType = "timeSeries" ;
data:
  count = 2, 6, 7 ;
  st_location = 2, 6, 7 ;
  st_location_ll = 1, 1, 1 ;
  st_file = "north.nc", "east.nc", "west.nc" ;
  st_format = "nc" ;
  st_address_temp = "t", "t", "t" ;
  st_address_time = "time", "time", "time" ;
  st_address_lat = "lat", "lat", "lat" ;
  st_address_lon = "lon", "lon", "lon" ;
}}
"""


# Example 7's packed fragment values; ncgen wraps the last (65539) to 3, the
# defect the test keeps.
PACKED_FIRST = "0, 6000, 12000, 18000, 24000, 30000"
PACKED_SECOND = "36000, 42000, 48000, 54000, 60000, 65539"


def packed_grouped(in_group=True):
    """Example 7: a packed (short) aggregation variable whose two fragments
    are short variables of this file, in the group /aggregation or (with
    in_group False) in the root group."""
    where = "/aggregation" if in_group else ""
    fragments = f"""    short temp1(t) ; short temp2(t) ;
    int location(i, j) ; string file(f_time) ; string format ; string address(f_time) ;
"""
    values = f"""    temp1 = {PACKED_FIRST} ;
    temp2 = {PACKED_SECOND} ;
    location = 6, 6 ; file = _, _ ; format = _ ; address = "{where}/temp1", "{where}/temp2" ;
"""
    head = f"""netcdf packed {{
dimensions: time = 12 ;{'' if in_group else ' t = 6 ; f_time = 2 ; i = 1 ; j = 2 ;'}
variables:
  short temp ; temp:units = "K" ; temp:scale_factor = 2.0e-05f ; temp:add_offset = 265.0f ;
    temp:aggregated_dimensions = "time" ;
    temp:aggregated_data = "location: {where}/location file: {where}/file format: {where}/format address: {where}/address" ;
  float time(time) ; time:units = "days since 2001-01-01" ;
"""
    if in_group:
        return head + f""":Conventions = "CF-1.10 CFA-0.6.2" ;
data:
  time = {_TIMES} ;
group: aggregation {{
  dimensions: t = 6 ; f_time = 2 ; i = 1 ; j = 2 ;
  variables:
{fragments}  data:
{values}}}
}}
"""
    return head + fragments + f""":Conventions = "CF-1.10 CFA-0.6.2" ;
data:
  time = {_TIMES} ;
{values}}}
"""

import './base.css';
import './timeline.css';
import './charts.css';
